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
