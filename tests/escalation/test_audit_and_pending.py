"""The audit log and the pending list: append-only, redacted, shared safely between processes."""

from __future__ import annotations

import json
import multiprocessing
import os

from gtd.audit import AuditLog
from gtd.config.schema import Level, Phase
from gtd.escalation.pending import PendingStore
from gtd.escalation.request import EscalationRequest
from gtd.paths import project_state_dir
from support import run_gtd


def _req(target, kind="domain"):
    return EscalationRequest.create(kind=kind, target=target, phase=Phase.BUILD, level=Level.READWRITE, reason="r")


def test_audit_log_lives_in_gtd_state_not_the_repo(repo):
    log = AuditLog(repo)
    log.record("run", command="build")
    assert log.path == project_state_dir(repo) / "audit.jsonl"
    assert not str(log.path).startswith(str(repo))
    assert oct(log.path.stat().st_mode & 0o777) == "0o600"


def test_audit_log_appends_and_keeps_earlier_entries(repo):
    log = AuditLog(repo)
    log.record("run", command="build", skipped=None)
    log.record("escalation_request", target="pypi.org:443", level="readwrite")
    first_bytes = log.path.read_bytes()
    log.record("escalation_decision", decision="deny", decided_by="headless deny")
    assert log.path.read_bytes().startswith(first_bytes)  # appended, never rewritten
    entries = AuditLog(repo).read()
    assert [e["event"] for e in entries] == ["run", "escalation_request", "escalation_decision"]
    assert "skipped" not in entries[0] and entries[0]["time"].endswith("+00:00")


def test_a_path_that_is_not_utf8_is_recorded_not_a_crash(repo):
    """A file name the agent made that is not UTF-8 (read by os/git as lone surrogates, e.g. a planted
    git dir gtd quarantines) is written as a JSON escape and read back as the same name."""
    name = os.fsdecode(b"sub\x9b31m\xff/.git")
    log = AuditLog(repo)
    log.record("quarantine", path=name)
    line = log.path.read_bytes()
    assert b"\x9b" not in line and line.decode("utf-8")  # valid UTF-8, no raw control byte
    assert AuditLog(repo).read()[-1]["path"] == name
    shown = run_gtd("audit", cwd=repo)
    assert shown.returncode == 0 and "sub\\udc9b31m\\udcff/.git" in shown.stdout, shown.stderr


def test_secrets_are_redacted_before_they_are_written(repo):
    log = AuditLog(repo)
    log.record("violation", detail="curl -H 'Authorization: Bearer abcdef0123456789' "
                                   "http://gtd:0123456789abcdef@127.0.0.1:41234 key sk-ant-api03-secretsecretsecret",
               env={"ANTHROPIC_API_KEY": "sk-ant-xyzxyzxyzxyz", "proxy_token": "tok123", "PATH": "/usr/bin"},
               argv=["git", "clone", "https://user:ghp_abcdefghijklmnopqrstuvwxyz@github.com/a/b"])
    text = log.path.read_text()
    for secret in ("abcdef0123456789", "0123456789abcdef", "secretsecretsecret", "xyzxyzxyzxyz", "tok123",
                   "ghp_abcdefghijklmnopqrstuvwxyz"):
        assert secret not in text
    entry = json.loads(text)
    assert entry["env"]["PATH"] == "/usr/bin" and "127.0.0.1:41234" in entry["detail"]


def _hammer(repo, n, tag):
    log = AuditLog(repo)
    for i in range(n):
        log.record("violation", target=f"{tag}-{i}", detail="x" * 5000)


def test_redaction_skips_a_pattern_only_where_it_cannot_match():
    """redact tries a pattern only on text that may hold it (an ASCII text without the pattern's words
    is left alone, so nothing is compiled for levels and paths): the result is what applying every
    pattern gives, for texts with and without secrets, in any case, and non-ASCII look-alikes."""
    import re

    from gtd.audit import _REDACTIONS, _SECRET_KEY, redact

    def everything(text: str) -> str:
        for pattern, replacement, _ in _REDACTIONS:
            text = re.sub(pattern, replacement, text)
        return text

    texts = ["readonly", "/home/me/project", "api.example.com:443", "", "sk-ant-abcdefgh1234",
             "SK-" + "a" * 20, "sk-" + "a" * 20, "ghp_" + "a" * 24, "GHP_" + "a" * 24, "AKIA" + "A" * 16,
             "akia" + "a" * 16, "xoxb-1234567890", "Authorization: Bearer abcdefgh12", "BASIC  zzzzzzzz",
             "API_KEY=abcd", "Api-Key: 'abcd'", "ACCESS_KEY=secret1", "TOKEN=x1y2", "PassWD=hunter2",
             "https://user:pw@host/", "git+ssh://a:b@c", "paſſword=hunter2", "authorızation=abcdefgh",
             "токен=abcd token=abcd", "nothing to see"]
    for text in texts:
        assert redact(text) == everything(text), text
    keys = {"level": "readonly", "apiKey": "v", "Authorization": "v", "password": "", "CREDENTIALS": "v",
            "tok": "v", "paſſword": "v"}
    assert redact(keys) == {key: "***" if value and re.search(_SECRET_KEY[0], key) else value
                            for key, value in keys.items()}


def test_concurrent_writers_never_tear_a_line(repo):
    procs = [multiprocessing.get_context("fork").Process(target=_hammer, args=(repo, 200, tag)) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    lines = AuditLog(repo).path.read_text().splitlines()
    assert len(lines) == 400
    assert sorted(json.loads(line)["target"] for line in lines) == sorted(f"{t}-{i}" for t in "ab" for i in range(200))


def test_a_torn_last_line_does_not_hide_the_rest(repo):
    log = AuditLog(repo)
    log.record("run")
    with open(log.path, "a") as handle:
        handle.write('{"event": "half')
    assert [e["event"] for e in log.read()] == ["run"]


def test_gtd_audit_shows_and_exports(repo):
    log = AuditLog(repo)
    for i in range(5):
        log.record("escalation_request", target=f"host{i}.example:443")
    shown = run_gtd("audit", "--limit", "2", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    assert "host4.example" in shown.stdout and "host3.example" in shown.stdout and "host2" not in shown.stdout
    exported = json.loads(run_gtd("audit", "--json", "--limit", "0", cwd=repo).stdout)
    assert [e["target"] for e in exported] == [f"host{i}.example:443" for i in range(5)]


def test_pending_dedupes_by_id_and_removes(repo):
    store = PendingStore(repo)
    a, b = _req("pypi.org:443"), _req("/x/y", kind="path")
    store.add(a)
    store.add(_req("pypi.org:443"))  # the same request from a later run
    store.add(b)
    assert [r.id for r in store.list()] == [a.id, b.id]
    store.remove(a.id)
    assert PendingStore(repo).list() == [b]


def _add_many(repo, tag, n):
    store = PendingStore(repo)
    for i in range(n):
        store.add(_req(f"{tag}{i}.example:443"))


def test_concurrent_pending_adds_lose_nothing(repo):
    procs = [multiprocessing.get_context("fork").Process(target=_add_many, args=(repo, tag, 30)) for tag in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert len(PendingStore(repo).list()) == 60


def test_a_damaged_pending_file_is_a_clear_error_not_an_empty_list(repo):
    store = PendingStore(repo)
    store.add(_req("pypi.org:443"))
    store.path.write_text("[{")
    result = run_gtd("approve", "--list", cwd=repo)
    assert result.returncode == 1 and "pending escalations file" in result.stderr and "damaged" in result.stderr
    assert store.path.read_text() == "[{"  # nothing overwritten


def test_approve_list_and_json(repo):
    assert "no pending escalation requests" in run_gtd("approve", "--list", cwd=repo).stderr
    request = _req("pypi.org:443")
    PendingStore(repo).add(request)
    listed = run_gtd("approve", "--list", cwd=repo)
    assert request.id in listed.stdout and "connect to pypi.org:443" in listed.stdout
    payload = json.loads(run_gtd("approve", "--json", cwd=repo).stdout)
    assert payload["pending"][0]["id"] == request.id and payload["pending"][0]["kind"] == "domain"


def test_approve_without_a_terminal_refuses_instead_of_hanging(repo):
    PendingStore(repo).add(_req("pypi.org:443"))
    result = run_gtd("approve", cwd=repo, timeout=30)
    assert result.returncode == 2 and "needs a terminal" in result.stderr
    assert len(PendingStore(repo).list()) == 1


def test_commands_outside_a_repository_say_so(tmp_path):
    result = run_gtd("audit", cwd=tmp_path)
    assert result.returncode == 2 and "not inside a git repository: run `git init` first" in result.stderr
    assert os.listdir(tmp_path) == []


def test_gtd_audit_json_exports_everything_by_default(repo):
    log = AuditLog(repo)
    for i in range(60):
        log.record("test_run", exit_code=i)
    assert len(json.loads(run_gtd("audit", "--json", cwd=repo).stdout)) == 60
    assert run_gtd("audit", cwd=repo).stdout.count("test_run") == 50
