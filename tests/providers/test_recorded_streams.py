"""Parsing of recorded real streams (tests/providers/recorded, made by record.py from the pinned CLIs):
the common event model, tool names as on the wire, and an honest verdict from exit status + stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtd.providers.events import EventKind
from gtd.providers.registry import _load
from agents import SETUPS

RECORDED = Path(__file__).parent / "recorded"


def replay(cli: str, scenario: str):
    provider = _load(cli)()
    meta = json.loads((RECORDED / f"{cli}-{scenario}.meta.json").read_text())
    events = [e for line in (RECORDED / f"{cli}-{scenario}.jsonl").read_text().splitlines()
              for e in provider.parse_line(line)]
    return provider, events, provider.outcome(meta["exit_code"], events), meta


@pytest.mark.parametrize("cli", sorted(SETUPS))
def test_shell_run(cli):
    provider, events, outcome, _ = replay(cli, "shell")
    assert outcome.ok and outcome.error is None
    assert events[0].kind == EventKind.START and events[0].session_id
    assert outcome.session_id == events[0].session_id or outcome.session_id
    call = next(e for e in events if e.kind == EventKind.TOOL_CALL)
    assert call.tool == SETUPS[cli].shell_tool and call.tool_input["command"] == "echo recorded-output"
    result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
    assert result.tool_id == call.tool_id and "recorded-output" in result.text and not result.is_error
    assert any(e.kind == EventKind.TEXT and "Recorded run finished." in e.text for e in events)
    assert events[-1].kind == EventKind.END and not events[-1].is_error


@pytest.mark.parametrize("cli", ["claude", "opencode"])
def test_forbidden_call_is_visible_to_the_guard(cli):
    provider, events, _, _ = replay(cli, "forbidden")
    calls = [e for e in events if e.kind == EventKind.TOOL_CALL]
    assert calls and calls[0].tool == SETUPS[cli].interactive_tool
    assert calls[0].tool in provider.forbidden_tools
    # the CLI itself refused it too (removed from what the model may use): an error result
    result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
    assert result.is_error


def test_pi_unknown_tool_is_an_error_result_and_nothing_is_forbidden():
    provider, events, outcome, _ = replay("pi", "forbidden")
    assert provider.forbidden_tools == frozenset()
    result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
    assert result.is_error and outcome.ok


@pytest.mark.parametrize("cli", sorted(SETUPS))
def test_api_error_is_a_failure(cli):
    _, events, outcome, meta = replay(cli, "api-error")
    assert not outcome.ok
    assert "401" in outcome.error or "x-api-key" in outcome.error or "API key" in outcome.error, outcome.error
    if cli == "pi":
        assert meta["exit_code"] == 0  # pi exits 0 on API errors: the verdict comes from the stream
        assert any(e.kind == EventKind.ERROR for e in events)


def test_claude_init_reports_tools_and_result_usage():
    _, events, _, _ = replay("claude", "shell")
    assert "Bash" in events[0].tools and not set(events[0].tools) & {"AskUserQuestion", "ExitPlanMode"}
    end = events[-1]
    assert end.usage and end.cost_usd is not None


@pytest.mark.parametrize("cli", sorted(SETUPS))
def test_garbage_lines_are_not_events(cli):
    provider = _load(cli)()
    for line in ("", "not json", "[1, 2]", '"text"', "{}", '{"type": "unknown_future_event"}'):
        assert provider.parse_line(line) == []


def test_claude_api_retries_are_events_a_person_sees():
    _, events, _, _ = replay("claude", "api-error")
    retries = [e for e in events if e.kind == EventKind.RETRY]
    assert [e.text for e in retries] == [
        "API error 401 (authentication_failed), retrying (attempt 1 of 2)",
        "API error 401 (authentication_failed), retrying (attempt 2 of 2)"]


def test_pi_auto_retry_is_a_retry_event():
    provider = _load("pi")()
    line = json.dumps({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000,
                       "errorMessage": "503 upstream\nunavailable"})
    [event] = provider.parse_line(line)
    assert event.kind == EventKind.RETRY
    assert event.text == "API error (503 upstream unavailable), retrying (attempt 1 of 3)"


@pytest.mark.parametrize("cli, how", [("claude", "/login"), ("opencode", "OPENAI_API_KEY"), ("pi", "ANTHROPIC_API_KEY")])
def test_an_authentication_failure_says_how_to_log_in_with_that_cli(cli, how):
    provider, _, outcome, _ = replay(cli, "api-error")
    explained = provider.explain_error(outcome.error)
    assert explained.startswith(outcome.error) and "Not logged in?" in explained and how in explained
    assert provider.explain_error("cannot reach api.anthropic.com:443") == "cannot reach api.anthropic.com:443"


def test_opencode_error_log_on_stderr_gives_one_retry_per_failed_agent_request():
    """Recorded from the pinned opencode (`--print-logs --log-level ERROR`, plus one INFO line) against
    a model API answering 503, then one refusing connections: each failed request of the agent is a
    retry; the title request's failure and other log lines are not."""
    provider = _load("opencode")()
    lines = (RECORDED / "opencode-retry-stderr.log").read_text().splitlines()
    events = [e for line in lines for e in provider.parse_stderr_line(line)]
    assert [(e.kind, e.text) for e in events] == [
        (EventKind.RETRY, "API error (upstream overloaded), opencode is retrying"),
        (EventKind.RETRY, "API error (upstream overloaded), opencode is retrying"),
        (EventKind.RETRY, "API error (Cannot connect to API: Unable to connect. Is the computer able to access the "
                          "url? (cause: Error: Unable to connect. Is the computer able to access the url?)), "
                          "opencode is retrying")]
