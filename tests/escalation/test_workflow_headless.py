"""Headless workflow runs: a boundary hit denies, saves the request for `gtd approve`, exits 4 with JSON
on stdout; after the person approves in a terminal, the next headless run needs nobody."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from escalation_support import finish
from gtd.audit import AuditLog
from gtd.escalation.pending import PendingStore
from gtd.paths import user_config_file
from support import git, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: test_count.py\n\n" \
       "## Open questions\n\n## Learnings\n"
RESUMED = "You were stopped because the sandbox refused"
NOTE = "# Design (written after the approval)\n"
CODE = "def add(a, b):\n    return a + b\n"


def _configure(repo, script, **config):
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(path), **config}, indent=2) + "\n")
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")


def _plan_script():
    return {"plan": [
        {"when": RESUMED, "actions": [{"write": {"path": "notes/design.md", "content": NOTE}}]},
        {"actions": [{"write": {"path": "TODO.md", "content": PLAN}},
                     {"write": {"path": "notes/design.md", "content": NOTE}}]},
    ]}


def _pending_payload(result):
    assert result.returncode == 4, (result.stdout, result.stderr)
    payload = json.loads(result.stdout)
    assert payload["status"] == "escalation_pending"
    return payload


def _decided_by(repo):
    return [(e["decision"], e["decided_by"]) for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]


def test_plan_without_a_terminal_exits_4_then_approve_and_the_rerun_needs_nobody(repo, spawn_gtd):
    _configure(repo, _plan_script())
    result = run_gtd("plan", cwd=repo)  # stdin is not a terminal
    payload = _pending_payload(result)
    [request] = payload["requests"]
    assert (request["kind"], request["target"], request["phase"], request["level"]) == \
        ("path", str((repo / "notes").resolve()), "plan", "readonly")
    assert request["reason"] == "write call: notes/design.md"  # the call's file, not its input's Python repr
    assert not (repo / "notes").exists()
    assert "🔐" not in git(repo, "log", "--format=%s")
    assert [r.id for r in PendingStore(repo).list()] == [request["id"]]

    listed = run_gtd("approve", "--list", cwd=repo)
    assert listed.returncode == 0 and request["id"] in listed.stdout and f"write {repo / 'notes'}" in listed.stdout
    assert json.loads(run_gtd("approve", "--json", cwd=repo).stdout)["pending"][0]["id"] == request["id"]

    child = spawn_gtd("approve", cwd=repo)
    child.expect("Pending request 1 of 1")
    child.expect("sandbox.levels.readonly.writablePaths \\+= 'notes'")
    child.expect("Decision \\[p/u/d/s\\]")  # no "once": nothing is running to allow it for
    child.sendline("p")
    output, status = finish(child)
    assert status == 0, output
    assert PendingStore(repo).list() == []
    assert "no pending escalation requests" in run_gtd("approve", "--list", cwd=repo).stderr

    again = run_gtd("plan", cwd=repo)  # headless again: the saved rule decides
    assert again.returncode == 0, again.stderr
    assert (repo / "notes" / "design.md").read_text() == NOTE
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[0] == "📝 plan: Counter"
    assert "🔐 gtd: allow writing notes at readonly (approved by user)" in subjects
    assert _decided_by(repo) == [("deny", "headless deny"), ("project", "user")]


def test_non_interactive_in_a_terminal_never_asks(repo, spawn_gtd):
    _configure(repo, _plan_script())
    child = spawn_gtd("plan", "--non-interactive", cwd=repo)
    output, status = finish(child)
    assert status == 4, output
    assert "Decision" not in output and '"escalation_pending"' in output
    assert len(PendingStore(repo).list()) == 1


def test_approve_walks_pending_requests_to_user_config_and_deny(repo, spawn_gtd):
    _configure(repo, _plan_script())
    assert run_gtd("plan", cwd=repo).returncode == 4
    child = spawn_gtd("approve", cwd=repo)
    child.expect("Decision")
    child.sendline("u")
    output, status = finish(child)
    assert status == 0, output
    assert str((repo / "notes").resolve()) in user_config_file().read_text()
    assert PendingStore(repo).list() == [] and not (repo / ".gtdrc.json").read_text().count("writablePaths")


def _build_script():
    return {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
            "build": [{"actions": [{"write": {"path": "count.py", "content": CODE}}]}]}


@pytest.mark.parametrize("retries", [0, 1])
def test_build_whose_tests_need_an_unapproved_host_exits_4(repo, registry, spawn_gtd, retries):
    """The test command reaches the (stand-in) registry through the proxy, which asks live: headless denies.
    That ends the build with exit 4 whether or not retries are left (retrying cannot help)."""
    _configure(repo, _build_script(), testCommand=f"curl --noproxy '' -fsS --max-time 30 http://{registry}/", testRetries=retries)
    assert run_gtd("plan", cwd=repo).returncode == 0
    before = git(repo, "log", "--format=%s")
    result = run_gtd("build", cwd=repo)
    payload = _pending_payload(result)
    assert [(r["kind"], r["target"], r["phase"]) for r in payload["requests"]] == [("domain", registry, "build")]
    assert payload["requests"][0]["reason"] == f"test command `curl --noproxy '' -fsS --max-time 30 http://{registry}/` " \
                                               "opened a connection to it"
    assert git(repo, "log", "--format=%s") == before  # nothing committed
    # the baseline test run (before any build agent run) met the host first: no agent run was spent on it
    assert len([e for e in AuditLog(repo).read() if e["event"] == "agent_run"]) == 1

    child = spawn_gtd("approve", cwd=repo)
    child.expect(f"connect to {registry} \\(build phase, level readwrite\\)")
    child.expect("Decision")
    child.sendline("p")
    assert finish(child)[1] == 0
    done = run_gtd("build", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "🔨 build: Add count.py with add(a, b)"


def test_build_whose_tests_print_a_network_error_asks_for_that_domain(repo, spawn_gtd):
    """Tests that fail resolving a host (DNS is not available in the sandbox) become a domain request."""
    command = "echo \"curl: (6) Could not resolve host: registry.example.test\" >&2; exit 1"
    _configure(repo, _build_script(), testCommand=command, testRetries=1)
    assert run_gtd("plan", cwd=repo).returncode == 0
    payload = _pending_payload(run_gtd("build", "--non-interactive", cwd=repo))
    assert [(r["kind"], r["target"]) for r in payload["requests"]] == [("domain", "registry.example.test:443")]
    assert payload["requests"][0]["reason"].startswith("test command `echo")


def test_refused_writes_of_a_tool_call_that_exits_0_are_shown_audited_and_escalated(repo):
    """Issue 24: a refused write inside a command that goes on and exits 0 left no refusal, no audit entry
    and no escalation."""
    command = "touch ~/.bashrc-x; echo > /etc/x; echo done"
    _configure(repo, {"plan": [{"actions": [{"shell": command}, {"write": {"path": "TODO.md", "content": PLAN}}]}]})
    result = run_gtd("plan", cwd=repo)
    payload = _pending_payload(result)
    home_file = os.path.join(os.environ["HOME"], ".bashrc-x")
    assert {r["target"] for r in payload["requests"]} == {home_file, "/etc/x"}
    assert all(r["reason"] == f"shell call: {command}" for r in payload["requests"])
    for target in (home_file, "/etc/x"):
        assert f"sandbox refused write {target}" in result.stderr, result.stderr
    violations = [(e["kind"], e["target"]) for e in AuditLog(repo).read() if e["event"] == "violation"]
    assert ("write", home_file) in violations and ("write", "/etc/x") in violations


def test_refused_writes_a_tool_call_hides_are_shown_and_audited_once(repo):
    """Issue 24, item 6: the sandbox itself reports the refusal (gtd/sandbox/linux/write_watch.py), so a
    command that silences its errors and exits 0 still has its refused writes shown and audited; a refusal
    both printed and watched is said once."""
    command = "touch ~/.bashrc-x 2>/dev/null; (echo > /etc/x) 2>/dev/null; echo > /etc/y; echo done"
    _configure(repo, {"plan": [{"actions": [{"shell": command}, {"write": {"path": "TODO.md", "content": PLAN}}]}]})
    result = run_gtd("plan", cwd=repo)
    home_file = os.path.join(os.environ["HOME"], ".bashrc-x")
    for target in (home_file, "/etc/x", "/etc/y"):
        assert result.stderr.count(f"sandbox refused write {target}") == 1, result.stderr
    assert "again" not in result.stderr, result.stderr
    violations = [(e["kind"], e["target"]) for e in AuditLog(repo).read() if e["event"] == "violation"]
    for target in (home_file, "/etc/x", "/etc/y"):
        assert violations.count(("write", target)) == 1, violations


def test_a_connection_the_agent_opens_is_asked_about_with_the_command_that_opened_it(repo, registry):
    """The escalation box's why for a connection: the tool call's command, not "a process in the sandbox"."""
    command = f"sleep 0.5; curl --noproxy '' -fsS --max-time 30 http://{registry}/; true"  # after the call's event
    _configure(repo, {"plan": [{"actions": [{"shell": command}, {"write": {"path": "TODO.md", "content": PLAN}}]}]})
    payload = _pending_payload(run_gtd("plan", cwd=repo))
    assert [(r["kind"], r["target"], r["reason"]) for r in payload["requests"]] == \
        [("domain", registry, f"shell call: {command} opened a connection to it")]
