"""The real agent CLIs (pinned, installed by scripts/install-agents) against the fake model server,
run through the real sandbox: a shell tool call that changes the workspace, a forbidden tool
stopped by gtd, an API failure surfaced as an error, and session resume."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fakemodel.server import say, shell, tool
from gtd.config.schema import Level, Phase
from gtd.providers.events import EventKind
from gtd.providers.registry import _load
from gtd.providers.runner import run_agent
from provider_support import request_for

pytestmark = pytest.mark.e2e
TIMEOUTS = SimpleNamespace(inactivity_seconds=90, run_seconds=180)
SYSTEM = "GTD-SYSTEM-MARKER: you are in the build phase."


def run(agent, repo, sandbox_session, *, provider=None, level=Level.READWRITE, phase=Phase.BUILD, **kw):
    provider = provider or _load(agent.name)()
    session = sandbox_session(repo, level=level, phase=phase, needs=provider.sandbox_needs())
    request = request_for(repo, kw.pop("prompt", "Create proof.txt"), phase, model=agent.model,
                          system_prompt=SYSTEM, **kw)
    return run_agent(provider, request, session, timeouts=TIMEOUTS)


def test_shell_tool_call_runs_and_the_run_finishes(agent, uncommitted_repo, fake_model, sandbox_session):
    fake_model.script([shell("echo made-by-agent > proof.txt && cat proof.txt"), say("All finished.")])
    result = run(agent, uncommitted_repo, sandbox_session)
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    assert (uncommitted_repo / "proof.txt").read_text() == "made-by-agent\n"
    kinds = [e.kind for e in result.events]
    assert kinds[0] == EventKind.START and kinds[-1] == EventKind.END
    call = next(e for e in result.events if e.kind == EventKind.TOOL_CALL)
    assert call.tool == agent.shell_tool and "echo made-by-agent" in call.tool_input["command"]
    outcome = next(e for e in result.events if e.kind == EventKind.TOOL_RESULT and e.tool_id == call.tool_id)
    assert "made-by-agent" in outcome.text and not outcome.is_error
    assert "All finished." in result.text()
    assert result.session_id
    main = fake_model.main_requests()
    assert len(main) >= 2 and SYSTEM in json.dumps(main[0].body)  # the phase's system prompt reached the model


def test_failing_command_is_an_error_result_not_a_failed_run(agent, uncommitted_repo, fake_model, sandbox_session):
    fake_model.script([shell("echo nope >&2; exit 7"), say("It failed, stopping.")])
    result = run(agent, uncommitted_repo, sandbox_session)
    assert result.ok, result.error
    outcome = next(e for e in result.events if e.kind == EventKind.TOOL_RESULT)
    assert outcome.is_error and "nope" in outcome.text


def test_sandbox_refuses_a_write_outside_the_workspace(agent, uncommitted_repo, fake_model, sandbox_session,
                                                        isolated_home):
    target = isolated_home / "outside.txt"
    fake_model.script([shell(f"echo x > {target}"), say("done")])
    result = run(agent, uncommitted_repo, sandbox_session)
    outcome = next(e for e in result.events if e.kind == EventKind.TOOL_RESULT)
    assert outcome.is_error and "Read-only file system" in outcome.text
    assert not target.exists()


def test_forbidden_tool_stops_the_agent(agent, uncommitted_repo, fake_model, sandbox_session):
    provider = _load(agent.name)()
    name = agent.interactive_tool
    if name is None:
        # pi has no interactive tools; prove the stream guard works on pi's events anyway
        # (it acts on tool_execution_start, before the tool runs) with a test-only catalog.
        provider.forbidden_tools = frozenset({"bash"})
        fake_model.script([shell("touch ran-anyway"), say("done")])
        name = "bash"
    else:
        fake_model.script([tool(name, {"questions": [{"question": "Which one?", "header": "Pick", "multiSelect": False,
                                                      "options": [{"label": "a", "description": "a"},
                                                                  {"label": "b", "description": "b"}]}]}),
                           shell("touch ran-anyway"), say("done")])
    result = run(agent, uncommitted_repo, sandbox_session, provider=provider)
    assert result.stopped == "forbidden_tool" and result.forbidden_tool == name, result.error
    assert not result.ok and name in result.error
    assert not (uncommitted_repo / "ran-anyway").exists()


def test_interactive_tools_are_not_offered_to_the_model(agent, uncommitted_repo, fake_model, sandbox_session):
    fake_model.script([say("nothing to do")])
    assert run(agent, uncommitted_repo, sandbox_session).ok
    offered = set()
    for r in fake_model.main_requests():
        for t in r.body.get("tools") or []:
            offered.add(t.get("name") or (t.get("function") or {}).get("name"))
    assert agent.shell_tool in offered
    assert not offered & {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode", "question", "plan_enter", "plan_exit"}


def test_api_failure_is_reported_as_an_error(agent, uncommitted_repo, fake_model, sandbox_session):
    fake_model.fail(401, "invalid x-api-key (fake)")
    result = run(agent, uncommitted_repo, sandbox_session)
    assert not result.ok and result.stopped is None
    assert "401" in result.error or "invalid x-api-key" in result.error or "API key" in result.error, result.error


def test_session_resumes_with_the_earlier_conversation(agent, uncommitted_repo, fake_model, sandbox_session):
    fake_model.script([say("first answer")])
    first = run(agent, uncommitted_repo, sandbox_session, prompt="FIRST-PROMPT")
    assert first.ok and first.session_id, first.error
    fake_model.requests.clear()
    fake_model.script([say("second answer")])
    second = run(agent, uncommitted_repo, sandbox_session, prompt="SECOND-PROMPT", resume_session=first.session_id)
    assert second.ok, second.error
    body = json.dumps(fake_model.main_requests()[0].body)
    assert "FIRST-PROMPT" in body and "first answer" in body and "SECOND-PROMPT" in body


NATIVE_DENIAL = {"claude": "Permission to use Write has been denied", "opencode": "rule which prevents you",
                 "pi": "permission denied"}  # pi cannot express it: the sandbox refuses (sealed workspace root)


def test_plan_phase_edits_only_its_file(agent, uncommitted_repo, fake_model, sandbox_session):
    """Readonly plan phase: TODO.md can be written; another file is refused by the CLI's own permission
    mechanism where it has one (claude, opencode), and by the sandbox always."""
    t = agent.files
    todo = str(uncommitted_repo / "TODO.md")
    fake_model.script([tool(t.write, {t.path: str(uncommitted_repo / "other.txt"), "content": "no"}),
                       tool(t.read, {t.path: todo}),  # claude overwrites only what it has read
                       tool(t.write, {t.path: todo, "content": "- [ ] planned\n"}), say("planned")])
    result = run(agent, uncommitted_repo, sandbox_session, level=Level.READONLY, phase=Phase.PLAN,
                 editable_paths=["TODO.md"])
    assert result.ok, f"{result.error}\n{result.stderr[-2000:]}"
    assert (uncommitted_repo / "TODO.md").read_text() == "- [ ] planned\n"
    assert not (uncommitted_repo / "other.txt").exists()
    refused, _, written = [e for e in result.events if e.kind == EventKind.TOOL_RESULT]
    assert refused.is_error and NATIVE_DENIAL[agent.name].lower() in refused.text.lower(), refused.text
    assert not written.is_error


def test_agent_cannot_edit_its_own_provider_config(agent, uncommitted_repo, fake_model, sandbox_session):
    provider = _load(agent.name)()
    config = {"claude": lambda p: p.config_dir / "settings.json",
              "opencode": lambda p: p.home / "config" / "opencode" / "opencode.json",
              "pi": lambda p: p.home / "models.json"}[agent.name](provider)
    fake_model.script([shell(f"echo '{{\"planted\": true}}' > {config}"), say("done")])
    result = run(agent, uncommitted_repo, sandbox_session, provider=provider)
    outcome = next(e for e in result.events if e.kind == EventKind.TOOL_RESULT)
    assert outcome.is_error and "Read-only file system" in outcome.text, outcome.text
    assert "planted" not in config.read_text()


def test_a_tool_longer_than_the_inactivity_limit_finishes(agent, uncommitted_repo, fake_model, sandbox_session):
    """Issue 24: opencode emits a tool's event only once the tool ends; its silent long tool is a tool
    at work (bounded by toolSeconds), not an inactive agent. claude and pi announce theirs."""
    # 20 s: opencode itself took over 10 s to say anything on a busy machine (two suite runs at once)
    fake_model.script([shell("sleep 32; echo slept > proof.txt"), say("All finished.")])
    provider = _load(agent.name)()
    session = sandbox_session(uncommitted_repo, needs=provider.sandbox_needs())
    request = request_for(uncommitted_repo, "Create proof.txt", Phase.BUILD, model=agent.model, system_prompt=SYSTEM)
    result = run_agent(provider, request, session, timeouts=SimpleNamespace(inactivity_seconds=20, tool_seconds=60,
                                                                             run_seconds=180))
    assert result.ok and result.stopped is None, f"{result.error}\n{result.stderr[-3000:]}"
    assert (uncommitted_repo / "proof.txt").read_text() == "slept\n"
    assert "All finished." in result.text()
