"""Live network escalation: the proxy holds the connection while a person decides in a real terminal.

`gtd sandbox run --level readwrite -- curl --noproxy "" http://localhost:PORT/` (through the proxy on purpose: NO_PROXY keeps localhost inside the sandbox) reaches a loopback test server
only through gtd's proxy. The user config lists the server's IP literal (loopback needs that), but
not the name `localhost:PORT`, so the proxy asks about the name: a real escalation.
"""

from __future__ import annotations

import json

import pytest
import tomlkit

from escalation_support import finish
from gtd.audit import AuditLog
from gtd.escalation.pending import PendingStore
from gtd.paths import user_config_file
from support import git, run_gtd

pytestmark = pytest.mark.bwrap


def _curl(target):
    return ["sandbox", "run", "--level", "readwrite", "--", "curl", "--noproxy", "", "-sS", "--max-time", "30", "-w", " HTTP=%{http_code}\\n",
            f"http://{target}/"]


def _run_and_answer(spawn_gtd, repo, target, answer):
    child = spawn_gtd(*_curl(target), cwd=repo)
    child.expect("The sandbox blocked the command")
    child.expect(f"connect to {target} \\(level readwrite\\)")
    child.expect(f"sandbox.levels.readwrite.allowDomains \\+= '{target}'")
    child.expect("Decision \\[o/p/u/d\\]")
    child.sendline(answer)
    return finish(child)


def _no_prompt(spawn_gtd, repo, target):
    child = spawn_gtd(*_curl(target), cwd=repo)
    output, status = finish(child)
    assert "The sandbox blocked" not in output
    return output, status


def test_allow_once_lets_this_connection_through_and_saves_nothing(repo, registry, spawn_gtd):
    output, status = _run_and_answer(spawn_gtd, repo, registry, "o")
    assert status == 0 and "REGISTRY-OK HTTP=200" in output, output
    assert not (repo / ".gtdrc.json").exists()
    assert registry not in user_config_file().read_text()
    output, _ = _run_and_answer(spawn_gtd, repo, registry, "d")  # the next run asks again
    assert "HTTP=403" in output


def test_deny_refuses_the_connection_and_saves_nothing(repo, registry, spawn_gtd):
    output, status = _run_and_answer(spawn_gtd, repo, registry, "d")
    assert "REGISTRY-OK" not in output and "HTTP=403" in output, output
    assert f"refused network {registry} (not approved)" in output
    assert not (repo / ".gtdrc.json").exists() and registry not in user_config_file().read_text()
    decisions = [(e["decision"], e["decided_by"]) for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert decisions == [("deny", "user")]
    assert any(e["event"] == "violation" and e["target"] == registry for e in AuditLog(repo).read())


def test_save_to_project_commits_the_rule_and_the_next_run_does_not_ask(repo, registry, spawn_gtd):
    output, status = _run_and_answer(spawn_gtd, repo, registry, "p")
    assert status == 0 and "REGISTRY-OK HTTP=200" in output, output
    assert json.loads((repo / ".gtdrc.json").read_text()) == {
        "sandbox": {"levels": {"readwrite": {"allowDomains": [registry]}}}}
    assert git(repo, "log", "-1", "--format=%s").strip() == f"🔐 gtd: allow {registry} at readwrite (approved by user)"
    assert git(repo, "status", "--porcelain").strip() == ""
    output, status = _no_prompt(spawn_gtd, repo, registry)
    assert status == 0 and "REGISTRY-OK HTTP=200" in output, output


def test_save_to_user_keeps_the_file_and_the_next_run_does_not_ask(repo, registry, spawn_gtd):
    output, status = _run_and_answer(spawn_gtd, repo, registry, "u")
    assert status == 0 and "REGISTRY-OK HTTP=200" in output, output
    text = user_config_file().read_text()
    assert text.startswith("# loopback needs its IP literal listed\n")
    assert tomlkit.parse(text).unwrap()["sandbox"]["levels"]["readwrite"]["allowDomains"][1] == registry
    assert not (repo / ".gtdrc.json").exists()
    output, status = _no_prompt(spawn_gtd, repo, registry)
    assert status == 0 and "REGISTRY-OK HTTP=200" in output, output


def test_headless_denies_exits_4_with_json_then_approve_and_rerun(repo, registry, spawn_gtd):
    result = run_gtd(*_curl(registry), cwd=repo)  # no terminal at all
    assert result.returncode == 4, result.stderr
    payload = json.loads(result.stderr.splitlines()[-1])  # stdout is the command's alone
    assert payload["status"] == "escalation_pending"
    [request] = payload["requests"]
    assert (request["kind"], request["target"], request["level"]) == ("domain", registry, "readwrite")
    assert "REGISTRY-OK" not in result.stdout and "escalation_pending" not in result.stdout
    assert [r.id for r in PendingStore(repo).list()] == [request["id"]]

    # --non-interactive in a terminal: still never asks
    child = spawn_gtd("sandbox", "run", "--non-interactive", *_curl(registry)[2:], cwd=repo)
    output, status = finish(child)
    assert status == 4 and "Decision" not in output and '"escalation_pending"' in output
    assert len(PendingStore(repo).list()) == 1  # the same request is not pending twice

    child = spawn_gtd("approve", cwd=repo)
    child.expect(f"connect to {registry}")
    child.expect("Decision")
    child.sendline("p")
    _, status = finish(child)
    assert status == 0 and PendingStore(repo).list() == []

    again = run_gtd(*_curl(registry), cwd=repo)  # headless again: the saved rule needs nobody
    assert again.returncode == 0 and "REGISTRY-OK HTTP=200" in again.stdout, again.stderr
    by = [e["decided_by"] for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert by == ["headless deny", "headless deny", "user"]
