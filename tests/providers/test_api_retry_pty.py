"""A model API answering 5xx, seen in a real terminal: the CLI's own retries show as "API error,
retrying" while gtd waits, and the build lands once the API recovers (real claude CLI, fake model
server, real sandbox)."""

from __future__ import annotations

import json

import pytest

from agents import require_cli, point_at
from fakemodel.server import say, shell
from support import Screen, git, seen, uncoloured

pytestmark = [pytest.mark.e2e, pytest.mark.bwrap]

PLAN = ("# Hello file\n\n## Action items\n- [ ] Create hello.txt saying hi\n  - Tests: `cat hello.txt` succeeds\n\n"
        "## Open questions\n\n## Learnings\n")


def test_claude_5xx_retries_are_shown_and_the_build_lands(repo, fake_model, monkeypatch):
    require_cli("claude", monkeypatch)
    point_at(fake_model, monkeypatch)
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "claude", "testCommand": "cat hello.txt",
                                                  "baselineTests": "off",  # red before the build, by design
                                                  "timeouts": {"inactivitySeconds": 120, "runSeconds": 240}}))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a plan")
    fake_model.script([shell("echo hi > hello.txt"), say("done")])
    fake_model.fail(503, "upstream overloaded", times=2)  # the first request and claude's first retry

    screen = Screen("build", cwd=repo, timeout=240)
    try:
        screen.child.expect(seen("API error 503 (server_error), retrying (attempt 1 of 2)"))
        status = screen.finish(timeout=240)
    finally:
        screen.stop()
    text = uncoloured(screen.text)
    assert status == 0, text
    assert "retrying (attempt 2 of 2)" in text
    assert "summary (ok, " in text and "🔨 build: Create hello.txt saying hi" in text
