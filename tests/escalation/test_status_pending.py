"""`gtd status` after a headless run stopped at the boundary (exit 4): it says approvals are pending,
lists them and names `gtd approve` (issue 24, item 3); once they are decided it says nothing of them."""

from __future__ import annotations

import json
import shutil

import pytest

from escalation_support import finish
from support import git, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py\n  - Tests: none\n\n## Open questions\n\n## Learnings\n"


def test_status_lists_pending_approvals_and_names_gtd_approve(repo, spawn_gtd):
    script = repo.parent / "script.json"
    script.write_text(json.dumps({"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}},
                                                        {"write": {"path": "notes/design.md", "content": "x\n"}}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script)}) + "\n")
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    assert "approvals:" not in run_gtd("status", cwd=repo).stdout

    assert run_gtd("plan", cwd=repo).returncode == 4
    status = run_gtd("status", cwd=repo)
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0].startswith("approvals: 1 pending") and "`gtd approve`" in lines[0], status.stdout
    assert lines[1].startswith(f"  - write {(repo / 'notes').resolve()} (plan phase, level readonly): write call:"), \
        status.stdout
    assert "notes/design.md" in lines[1]
    [listed] = json.loads(run_gtd("status", "--json", cwd=repo).stdout)["pending_approvals"]
    assert (listed["kind"], listed["target"], listed["phase"]) == ("path", str((repo / "notes").resolve()), "plan")

    child = spawn_gtd("approve", cwd=repo)
    child.expect("Decision \\[p/u/d/s\\]")
    child.sendline("d")
    assert finish(child)[1] == 0
    assert "approvals:" not in run_gtd("status", cwd=repo).stdout
    assert json.loads(run_gtd("status", "--json", cwd=repo).stdout)["pending_approvals"] == []
