"""A model API answering 5xx, seen in a real terminal: the CLI's own retries show as "API error,
retrying" while gtd waits, and the build lands once the API recovers (real claude CLI, fake model
server, real sandbox)."""

from __future__ import annotations

import json

import pytest

from gtd.escalation.trust import TrustStore

from agents import require_cli, point_at
from fakemodel.server import say, shell
from support import Screen, git, run_gtd, seen, uncoloured

pytestmark = [pytest.mark.e2e, pytest.mark.bwrap]

PLAN = ("# Hello file\n\n## Action items\n- [ ] Create hello.txt saying hi\n  - Tests: `cat hello.txt` succeeds\n\n"
        "## Open questions\n\n## Learnings\n")


def test_claude_5xx_retries_are_shown_and_the_build_lands(repo, fake_model, monkeypatch):
    require_cli("claude", monkeypatch)
    point_at(fake_model, monkeypatch)
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "claude", "testCommand": "cat hello.txt",
                                                  "baselineTests": "off",  # red before the build, by design
                                                  "timeouts": {"inactivitySeconds": 120, "runSeconds": 240}}))
    TrustStore().trust(repo / ".gtdrc.json")
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


def _opencode_plan(repo, fake_model, monkeypatch) -> None:
    require_cli("opencode", monkeypatch)
    point_at(fake_model, monkeypatch)
    (repo / ".gtdrc.json").write_text(json.dumps({
        "provider": "opencode", "models": {"build": "gtd-openai/fake-model"}, "testCommand": "cat hello.txt",
        "baselineTests": "off", "timeouts": {"inactivitySeconds": 120, "runSeconds": 240}}))
    TrustStore().trust(repo / ".gtdrc.json")  # the person's own choice of agent and model (issue 22: it needs trust)
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a plan")
    fake_model.script([shell("echo hi > hello.txt"), say("done")])
    # The agent's requests fail three times (opencode retries them, silent in its JSON stream); its
    # title request is answered, so exactly three failed requests are the agent's.
    fake_model.fail(503, "upstream overloaded", times=3, agent_only=True)


RETRYING = "API error (upstream overloaded), opencode is retrying"


def test_opencode_5xx_retries_are_shown_from_its_error_log(repo, fake_model, monkeypatch):
    """opencode prints nothing in its JSON stream while it backs off on 5xx; its error log on stderr
    names each failed request (for any model host, HTTPS included), and gtd shows it on screen, once
    per try: the proxy, which also sees these plain-HTTP 503s, adds no second line."""
    _opencode_plan(repo, fake_model, monkeypatch)
    screen = Screen("build", cwd=repo, timeout=240)
    try:
        screen.child.expect(seen(RETRYING))
        status = screen.finish(timeout=240)
    finally:
        screen.stop()
    text = uncoloured(screen.text)
    assert status == 0, text
    assert text.count(RETRYING) >= 3
    assert f"from {fake_model.host_port}" not in text  # no proxy line besides the CLI's
    assert "stream error" not in text and "level=" not in text  # the log itself stays off the screen
    assert "summary (ok, " in text and "🔨 build: Create hello.txt saying hi" in text


def test_opencode_5xx_retries_are_api_retry_events_in_jsonl(repo, fake_model, monkeypatch):
    _opencode_plan(repo, fake_model, monkeypatch)
    result = run_gtd("build", "--json", cwd=repo, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    events = [json.loads(line) for line in result.stdout.splitlines()]
    retries = [{k: v for k, v in e.items() if k != "time"} for e in events if e["event"] == "api_retry"]
    assert retries == [{"event": "api_retry", "phase": "build", "source": "cli", "text": RETRYING}] * 3
    assert events[-1]["event"] == "run_end" and events[-1]["status"] == "ok"
