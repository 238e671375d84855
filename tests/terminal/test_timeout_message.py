"""When gtd gives up on the agent, the message says what was running and which setting to raise (exit 6)."""

from __future__ import annotations

import json
import shutil

import pytest

from support import explain, git, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = ("# Counter\n\n## Action items\n- [ ] Add count.py\n  - Tests: test_count.py\n\n"
        "## Open questions\n\n## Learnings\n")


def test_a_tool_call_silent_past_tool_seconds_names_it_and_the_setting(repo):
    # The scripted agent's unknown tool "runs" silently for 2 s; tools may stay silent for 1 s here.
    script = {"build": [{"actions": [{"tool": {"name": "Compile", "input": {"command": "make all"}}}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json"),
                                                  "timeouts": {"inactivitySeconds": 30, "toolSeconds": 1}}))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a plan")
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 6, explain(result)
    message = " ".join(result.stderr.split())
    assert "build: no output from scripted for 1s while the tool call `Compile: make all` was running" in message
    assert "raise timeouts.toolSeconds in .gtdrc.json or your user config" in message
