"""The live status area's content (rendered off-screen): what it says while the agent is silent,
retrying, or running a tool, and that token counts from every CLI's usage add up."""

from __future__ import annotations

import io
import json

from gtd.providers.events import AgentEvent, EventKind, token_counts
from gtd.terminal_text import SafeConsole
from gtd.workflow.progress import QUIET_SECONDS, Progress


def _status(progress: Progress) -> str:
    out = io.StringIO()
    SafeConsole(file=out, width=200, color_system=None).print(progress._render())
    return out.getvalue()


def _progress() -> Progress:
    progress = Progress(SafeConsole(file=io.StringIO(), color_system=None), live=False)
    progress.phase("build", item="Add count.py", level="readwrite", provider="opencode")
    return progress


def test_a_silent_agent_is_said_to_be_waiting_not_frozen():
    progress = _progress()
    assert "waiting for" not in _status(progress)
    progress.last_heard -= QUIET_SECONDS + 5
    status = _status(progress)
    assert "build · readwrite · opencode · Add count.py" in status and "Ctrl-C to stop" in status
    assert "waiting for opencode: no output for 15s" in status and "timeouts.inactivitySeconds" in status


def test_a_running_tool_call_is_shown_instead_and_its_output_tail_after_it():
    progress = _progress()
    progress.event(AgentEvent(EventKind.TOOL_CALL, tool="bash", tool_id="1", tool_input={"command": "npm test"}))
    progress.last_heard -= QUIET_SECONDS + 5
    status = _status(progress)
    assert "▶ bash: npm test" in status and "waiting for" not in status
    progress.event(AgentEvent(EventKind.TOOL_RESULT, tool_id="1", text="\n".join(f"line {i}" for i in range(9))))
    status = _status(progress)
    assert "│ line 8" in status and "│ line 4" in status and "line 3" not in status


def test_a_retry_is_shown_until_the_agent_speaks_again():
    progress = _progress()
    progress.event(AgentEvent(EventKind.RETRY, text="API error 503 (server_error), retrying (attempt 1 of 2)"))
    assert "↻ API error 503 (server_error), retrying (attempt 1 of 2)" in _status(progress)
    progress.event(AgentEvent(EventKind.TEXT, text="back"))
    assert "retrying" not in _status(progress)


def test_token_counts_from_each_cli_and_their_totals():
    claude = {"input_tokens": 24, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1000,
              "output_tokens": 14}
    opencode = {"total": 19, "input": 12, "output": 7, "reasoning": 3, "cache": {"write": 1, "read": 2}}
    pi = {"input": 12, "output": 7, "cacheRead": 5, "cacheWrite": 0, "totalTokens": 19}
    assert token_counts(claude) == (1124, 14)
    assert token_counts(opencode) == (15, 10)
    assert token_counts(pi) == (17, 7)
    assert token_counts({"turns": 1}) is None and token_counts(None) is None
    progress = _progress()
    progress.event(AgentEvent(EventKind.END, usage=claude, cost_usd=0.25))
    progress.event(AgentEvent(EventKind.END, usage=opencode, cost_usd=0.5))
    assert "1.1k in / 24 out tokens · $0.7500" in _status(progress)


def test_every_opencode_step_counts_its_tokens_and_cost():
    """opencode reports each model request of its loop as a `step_finish` (reason `tool-calls`), and
    only the last one with reason `stop`: the totals are the sum of all of them (issue 24)."""
    from gtd.providers.opencode import OpencodeProvider

    def step(reason: str, n: int) -> str:
        return json.dumps({"type": "step_finish", "sessionID": "ses_1", "part": {
            "reason": reason, "type": "step-finish", "cost": 0.01 * n,
            "tokens": {"total": 1010 * n, "input": 1000 * n, "output": 10 * n, "reasoning": 0,
                       "cache": {"write": 0, "read": 0}}}})

    provider, progress = OpencodeProvider(), _progress()
    events = [e for line in (step("tool-calls", 1), step("tool-calls", 2), step("stop", 3))
              for e in provider.parse_line(line)]
    assert [e.kind for e in events] == [EventKind.USAGE, EventKind.USAGE, EventKind.END]
    assert provider.outcome(0, events).ok
    for event in events:
        progress.event(event)
    assert (progress.usage.input, progress.usage.output) == (6000, 60)
    assert round(progress.usage.cost_usd, 6) == 0.06
    assert "6.0k in / 60 out tokens · $0.0600" in _status(progress)


def test_a_clis_retry_is_carried_in_jsonl_as_an_api_retry_event_from_the_cli():
    events = io.StringIO()
    progress = Progress(SafeConsole(file=io.StringIO(), color_system=None), live=False, events=events)
    progress.phase("build", item="Add count.py", level="readwrite", provider="opencode")
    progress.event(AgentEvent(EventKind.RETRY, text="API error (upstream overloaded), opencode is retrying"))
    records = [json.loads(line) for line in events.getvalue().splitlines()]
    assert [{k: v for k, v in r.items() if k != "time"} for r in records if r["event"] == "api_retry"] == [
        {"event": "api_retry", "phase": "build", "source": "cli",
         "text": "API error (upstream overloaded), opencode is retrying"}]


def test_the_status_shows_the_level_the_person_raised_the_phase_to():
    """Answering "run this phase at network" mid-run: the running agent's connections are allowed from then on,
    so the status line says network at once, not at the next agent run; a test rerun at a level says it too."""
    progress = _progress()
    progress.audited({"event": "escalation_decision", "id": "r1", "target": "registry.npmjs.org:443",
                      "decision": "network", "decided_by": "user", "raised_level": "network"})
    assert "build · network · opencode · Add count.py" in _status(progress)
    progress.phase("build", item="Add count.py", level="readwrite", provider="opencode")
    progress.audited({"event": "test_run", "phase": "build", "level": "network", "exit_code": 0})
    assert "build · network · opencode" in _status(progress)


def test_a_grep_call_shows_its_pattern_and_where_it_looks():
    """Issue 24: a Grep line showed only its path; the pattern is what it is about."""
    out = io.StringIO()
    progress = Progress(SafeConsole(file=out, width=200, color_system=None), live=False)
    progress.phase("build", item="Add count.py", level="readwrite", provider="claude")
    progress.event(AgentEvent(EventKind.TOOL_CALL, tool="Grep", tool_id="1",
                              tool_input={"pattern": "def add\\(", "path": "src", "output_mode": "content"}))
    assert "Grep def add\\( in src" in out.getvalue()
    assert "▶ Grep: def add\\( in src" in _status(progress)
    progress.event(AgentEvent(EventKind.TOOL_CALL, tool="grep", tool_id="2", tool_input={"pattern": "TODO"}))
    assert "grep TODO\n" in out.getvalue()


def test_with_tokens_the_status_line_keeps_ctrl_c_at_120_columns():
    """Issue 24: the item and token counts pushed "Ctrl-C to stop" off a 120-column line; now the item
    is shortened first (then the tokens, then level and provider), and the line fits."""
    progress = Progress(SafeConsole(file=io.StringIO(), color_system=None), live=False)
    progress.phase("build", item="Add a streaming parser for the vendor's CSV exports with per-column type "
                   "inference", level="readwrite", provider="opencode")
    progress.event(AgentEvent(EventKind.END, usage={"input": 32_200, "output": 6_800}, cost_usd=0.1234))
    for width, kept in ((120, "build · readwrite · opencode · Add a streaming"), (80, "build · "), (60, "build · ")):
        out = io.StringIO()
        SafeConsole(file=out, width=width, color_system=None).print(progress._render())
        line = out.getvalue().splitlines()[0]
        assert line.endswith("Ctrl-C to stop") and len(line) < width, (width, line)
        assert kept in line and "00:0" in line, (width, line)
    assert "32.2k in / 6.8k out tokens · $0.1234" in _status(progress)  # wide enough: all of it


def test_reviewer_decisions_and_fallbacks_are_lines_and_a_saved_rules_commit_still_counts():
    out = io.StringIO()
    events = io.StringIO()
    progress = Progress(SafeConsole(file=out, color_system=None, width=200), live=False, events=events)
    progress.audited({"event": "escalation_decision", "id": "r1", "target": "registry.npmjs.org:443",
                      "decision": "once", "decided_by": "reviewer", "model": "m-1", "reason": "the npm registry"})
    progress.audited({"event": "reviewer_fallback", "id": "r2", "target": "x.example:443",
                      "reason": "no answer within timeouts.reviewerSeconds (4s)"})
    progress.audited({"event": "escalation_decision", "id": "r3", "target": "y.example:443", "decision": "project",
                      "decided_by": "user", "commit": "0123456789abcdef"})
    shown = out.getvalue()
    assert "registry.npmjs.org:443 allowed by reviewer: the npm registry" in shown
    assert "reviewer gave no verdict on x.example:443 (no answer within timeouts.reviewerSeconds (4s))" in shown
    assert progress.commits == [("0123456789", "")]  # the 🔐 commit of a saved rule
    [decision] = [json.loads(line) for line in events.getvalue().splitlines() if '"decision"' in line][:1]
    assert (decision["decided_by"], decision["model"], decision["reason"]) == ("reviewer", "m-1", "the npm registry")


def test_a_retried_refusal_is_one_line_a_live_count_and_one_summary_entry():
    """Issue 24: pip retrying a denied host made 30 "refused network" lines and 30 summary entries."""
    out, events = io.StringIO(), io.StringIO()
    progress = Progress(SafeConsole(file=out, width=200, color_system=None), live=False, events=events)
    progress.phase("build", item="Add count.py", level="readwrite", provider="claude")
    for _ in range(30):
        progress.refused("network", "pypi.denied.example:443", phase="build", level="readwrite", detail="not approved")
    progress.refused("write", "/etc/x", phase="build", level="readwrite")
    assert "✗ refused network pypi.denied.example:443 again (30 in all)" in _status(progress)
    progress.committed("🔨 build: Add count.py", "0123456789abcdef", ["A  count.py"], step="build")
    progress.finish("ok", 0)
    shown = out.getvalue()
    assert shown.count("sandbox refused network pypi.denied.example:443") == 1
    assert shown.count("refused network pypi.denied.example:443 29 more time(s), 30 in all") == 1
    assert "refused by the sandbox: 31 (network pypi.denied.example:443 ×30; write /etc/x)" in shown
    records = [json.loads(line) for line in events.getvalue().splitlines()]
    assert [r["count"] for r in records if r["event"] == "refusal"] == [*range(1, 31), 1]  # each one, counted
    assert next(r for r in records if r["event"] == "run_end")["refusals"] == 31


def test_a_tool_opencode_has_not_announced_is_shown_running_not_as_a_silent_agent():
    progress = _progress()
    progress.last_heard -= QUIET_SECONDS + 5
    progress.unannounced_tool("npm test")
    status = _status(progress)
    assert "▶ a tool: npm test" in status and "waiting for" not in status
    progress.unannounced_tool(None)
    assert "a tool:" not in _status(progress) and "waiting for opencode" in _status(progress)
