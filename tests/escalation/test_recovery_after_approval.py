"""Recovery after an approval (issue 24, item 1): a headless build stops at the boundary (exit 4) with the
agent's work half done; `gtd approve` saves the rule to the project (a 🔐 commit of .gtdrc.json); the next
build carries the agent's work on, resuming its session, and makes one clean 🔨 commit: no 🔧 fix, and
the item is not started from scratch."""

from __future__ import annotations

import json
import shutil

import pytest

from escalation_support import finish
from gtd.audit import AuditLog
from support import git, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: the test command\n\n" \
       "## Open questions\n\n## Learnings\n"
HALF = "def add(a, b):\n    pass  # unfinished\n"
DONE = "def add(a, b):\n    return a + b\n"


def test_approval_saved_to_the_project_then_the_build_carries_the_agents_work_on(repo, registry, spawn_gtd):
    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
              "build": [{"when": ["Carry on", "count.py"], "actions": [{"write": {"path": "count.py", "content": DONE}}]},
                        {"actions": [{"write": {"path": "count.py", "content": HALF}}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    test_command = f"curl --noproxy '' -fsS --max-time 30 http://{registry}/ && grep -q 'return a + b' count.py"
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json"),
                                                  "testCommand": test_command, "testRetries": 0,
                                                  "baselineTests": "off"}, indent=2) + "\n")
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    assert run_gtd("plan", cwd=repo).returncode == 0
    planned = git(repo, "log", "--format=%s").splitlines()

    stopped = run_gtd("build", cwd=repo)
    assert stopped.returncode == 4, stopped.stderr
    assert (repo / "count.py").read_text() == HALF  # the agent's half-done work, uncommitted
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["agent_work"]["paths"] == ["count.py"] and status["pending_edits"] is None

    child = spawn_gtd("approve", cwd=repo)
    child.expect(f"connect to {registry} \\(build phase, level readwrite\\)")
    child.expect("Decision")
    child.sendline("p")  # save to the project: gtd's own 🔐 commit of .gtdrc.json
    output, code = finish(child)
    assert code == 0, output
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[0].startswith("🔐") and subjects[1:] == planned
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [".gtdrc.json"]

    # gtd's own commit changed nothing of the classification: still the agent's unfinished work
    status = run_gtd("status", cwd=repo)
    assert "agent's work: count.py -> the build phase's unfinished work" in status.stdout, status.stdout
    assert "uncommitted:" not in status.stdout and "🔧" not in status.stdout

    done = run_gtd("build", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "carrying on with the agent's unfinished work (count.py; stopped: escalation pending), resuming its " \
           "scripted session" in done.stderr
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[0] == "🔨 build: Add count.py with add(a, b)" and subjects[1].startswith("🔐")
    assert subjects[2:] == planned
    assert not any(s.startswith("🔧") for s in subjects)
    assert git(repo, "show", "HEAD:count.py") == DONE  # carried on, not duplicated
    assert git(repo, "status", "--porcelain") == ""
    runs = [e for e in AuditLog(repo).read() if e["event"] == "agent_run" and e.get("phase") == "build"]
    assert len(runs) == 2 and "resume" not in runs[0]
    assert runs[1]["resume"]  # the second run's first agent run resumed the stopped session (a new one has none)
