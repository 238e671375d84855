"""`gtd audit --json` after real runs: every run, request and decision with who decided, and no secret."""

from __future__ import annotations

import json
import shutil

import pytest

from escalation_support import finish
from gtd.escalation.pending import PendingStore
from gtd.audit import AuditLog
from support import git, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: test_count.py\n\n" \
       "## Open questions\n\n## Learnings\n"
API_KEY = "sk-ant-api03-AUDITSECRETabcdefghijklmnop"
PROXY_TOKEN = "proxytokenQWERTY123456"
# The agent saves a model answer outside its boundary; its command line carries credentials.
COMMAND = (f"curl -sS -x http://gtd:{PROXY_TOKEN}@127.0.0.1:9 -H 'x-api-key: {API_KEY}' "
           "https://api.anthropic.com/v1/models > answer.json")
SECRETS = (API_KEY, "AUDITSECRET", PROXY_TOKEN)


def _setup(repo):
    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}, {"shell": COMMAND}]}]}
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(path)}) + "\n")
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")


def test_audit_json_has_runs_requests_decisions_and_who_decided_with_secrets_redacted(repo, spawn_gtd, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    _setup(repo)

    headless = run_gtd("plan", cwd=repo)
    assert headless.returncode == 4, headless.stderr
    [request] = json.loads(headless.stdout)["requests"]
    assert request["target"] == str((repo / "answer.json").resolve())
    assert "curl" in request["reason"] and not any(s in headless.stdout for s in SECRETS)
    assert not any(s in PendingStore(repo).path.read_text() for s in SECRETS)

    git(repo, "checkout", "--", "TODO.md")  # start the plan over, this time with a person at the terminal
    child = spawn_gtd("plan", cwd=repo)
    child.expect(f"write {repo / 'answer.json'}")
    child.expect("Decision")
    child.sendline("d")
    output, status = finish(child)
    assert status == 0, output
    assert not any(s in output for s in SECRETS)

    exported = run_gtd("audit", "--json", cwd=repo)
    assert exported.returncode == 0, exported.stderr
    entries = json.loads(exported.stdout)
    assert entries == AuditLog(repo).read()
    assert [e["command"] for e in entries if e["event"] == "run"] == ["plan", "plan"]
    requests = [e for e in entries if e["event"] == "escalation_request"]
    assert [(e["kind"], e["target"], e["phase"], e["level"]) for e in requests] == \
        [("path", request["target"], "plan", "readonly")] * 2
    decisions = [(e["id"], e["decision"], e["decided_by"]) for e in entries if e["event"] == "escalation_decision"]
    assert decisions == [(request["id"], "deny", "headless deny"), (request["id"], "deny", "user")]
    assert any(e["event"] == "violation" and e["target"] == request["target"] for e in entries)

    text = AuditLog(repo).path.read_text()
    assert not any(s in text for s in SECRETS)
    assert "x-api-key: ***" in text and "http://gtd:***@127.0.0.1:9" in text  # redacted, still readable

    shown = run_gtd("audit", cwd=repo)  # the table view
    assert "escalation_decision" in shown.stdout and not any(s in shown.stdout for s in SECRETS)
