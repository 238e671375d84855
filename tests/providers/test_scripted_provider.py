"""The scripted provider: turn selection, real tool actions, errors, the guard, and the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from gtd.config.schema import GtdConfig, Level, Phase
from gtd.errors import ConfigError, GtdError
from gtd.providers.events import EventKind
from gtd.providers.registry import get_provider
from gtd.providers.runner import run_agent
from gtd.providers.scripted import ScriptedProvider, default_script_path
from gtd.providers.scripted_agent import ScriptError, pick_turn, validate_script
from provider_support import request_for

TIMEOUTS = SimpleNamespace(inactivity_seconds=30, run_seconds=120)


def run(script_path, cwd, launcher, prompt="do it", phase=Phase.BUILD, **kw):
    provider = ScriptedProvider(script_path)
    return run_agent(provider, request_for(cwd, prompt, phase, **kw), launcher, timeouts=TIMEOUTS)


def test_pick_turn_first_match_all_substrings():
    turns = [{"when": ["alpha", "beta"], "say": "1"}, {"when": "beta", "say": "2"}, {"say": "3"}]
    assert pick_turn(turns, "alpha and beta")["say"] == "1"
    assert pick_turn(turns, "only beta")["say"] == "2"
    assert pick_turn(turns, "nothing")["say"] == "3"
    assert pick_turn(turns[:2], "nothing") is None


@pytest.mark.parametrize("bad, where", [
    ([], "must be a JSON object"),
    ({"deploy": []}, "unknown phase 'deploy'"),
    ({"build": [{"actions": [{"shell": 1}]}]}, "build[0].actions[0].shell"),
    ({"build": [{"actions": [{"rm": "x"}]}]}, "unknown action 'rm'"),
    ({"build": [{"actions": [{"write": {"path": "a"}}]}]}, "build[0].actions[0].write"),
    ({"build": [{"when": 3}]}, "build[0].when"),
    ({"plan": [{"actions": [], "sai": "typo"}]}, "unknown keys ['sai']"),
])
def test_malformed_scripts_name_the_place(bad, where):
    with pytest.raises(ScriptError, match=None) as info:
        validate_script(bad)
    assert where in str(info.value)


def test_shell_write_and_say_produce_events_and_effects(launcher, workdir, write_script):
    script = write_script({"build": [
        {"when": "other", "actions": [{"shell": "touch wrong-turn"}]},
        {"when": ["add", "greeting"], "actions": [
            {"write": {"path": "sub/hello.txt", "content": "hi\n"}},
            {"shell": "cat sub/hello.txt && echo from-$PWD"},
            {"shell": "echo broken >&2; exit 4"},
        ], "say": "done"},
    ]})
    result = run(script, workdir, launcher, prompt="please add a greeting")
    assert result.ok, result.error
    assert (workdir / "sub/hello.txt").read_text() == "hi\n"
    assert not (workdir / "wrong-turn").exists()
    kinds = [e.kind for e in result.events]
    assert kinds == [EventKind.START] + [EventKind.TOOL_CALL, EventKind.TOOL_RESULT] * 3 + [EventKind.TEXT, EventKind.END]
    start = result.events[0]
    assert start.tools == ["shell", "write"] and result.session_id == start.session_id
    calls = [e for e in result.events if e.kind == EventKind.TOOL_CALL]
    assert [c.tool for c in calls] == ["write", "shell", "shell"]
    assert calls[1].tool_input == {"command": "cat sub/hello.txt && echo from-$PWD"}
    results = [e for e in result.events if e.kind == EventKind.TOOL_RESULT]
    assert f"hi\nfrom-{workdir}" in results[1].text and not results[1].is_error
    assert results[2].is_error and "broken" in results[2].text and "exit status 4" in results[2].text
    assert result.text() == "done"


def test_phase_selects_its_own_turns(launcher, workdir, write_script):
    script = write_script({"plan": [{"actions": [{"write": {"path": "TODO.md", "content": "- [ ] x\n"}}]}],
                           "build": [{"actions": [{"write": {"path": "built", "content": ""}}]}]})
    assert run(script, workdir, launcher, phase=Phase.PLAN).ok
    assert (workdir / "TODO.md").exists() and not (workdir / "built").exists()


def test_no_matching_turn_is_an_error(launcher, workdir, write_script):
    script = write_script({"build": [{"when": "never", "say": "x"}]})
    result = run(script, workdir, launcher)
    assert not result.ok and "no build turn matching" in result.error


def test_resume_keeps_the_session_id(launcher, workdir, write_script):
    script = write_script({"build": [{"say": "again"}]})
    result = run(script, workdir, launcher, resume_session="sess-42")
    assert result.ok and result.session_id == "sess-42"


def test_forbidden_tool_is_stopped_before_later_actions(launcher, workdir, write_script):
    script = write_script({"build": [{"actions": [
        {"shell": "echo before > before"},
        {"tool": {"name": "AskUserQuestion", "input": {"questions": [{"question": "Which one?"}]}}},
        {"write": {"path": "after", "content": "should never happen"}},
    ]}]})
    result = run(script, workdir, launcher)
    assert result.stopped == "forbidden_tool" and result.forbidden_tool == "AskUserQuestion"
    assert (workdir / "before").exists() and not (workdir / "after").exists()


@pytest.mark.parametrize("tool", ["question", "plan_enter", "ExitPlanMode"])
def test_scripted_forbids_every_cli_interactive_tool(tool, launcher, workdir, write_script):
    script = write_script({"build": [{"actions": [{"tool": {"name": tool, "input": {}}}]}]})
    assert run(script, workdir, launcher).forbidden_tool == tool


def test_allowed_unknown_tool_gets_an_error_result(launcher, workdir, write_script):
    script = write_script({"build": [{"actions": [{"tool": {"name": "WebSearch", "input": {"q": "x"}}}], "say": "ok"}]})
    result = run(script, workdir, launcher)
    assert result.ok
    tool_result = next(e for e in result.events if e.kind == EventKind.TOOL_RESULT)
    assert tool_result.is_error and "not available" in tool_result.text


def test_bad_script_file_is_a_usage_error_before_running(launcher, workdir, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        run(bad, workdir, launcher)
    with pytest.raises(ConfigError, match="cannot read"):
        run(tmp_path / "missing.json", workdir, launcher)
    assert launcher.started == []


def test_script_named_by_absolute_path_is_never_read_through_a_symlink(launcher, workdir, tmp_path, write_script):
    # The `script` a config names may be a file the agent can replace: in the workspace, or a link it planted.
    other = write_script({"build": [{"say": "the linked file was read"}]}, name="other.json")
    (workdir / "s.json").symlink_to(other)
    (workdir / "linked").symlink_to(tmp_path)
    outside = tmp_path / "outside-link.json"
    outside.symlink_to(other)
    for named, shown in [(workdir / "s.json", "is a symlink"), (workdir / "linked" / "other.json", "is a symlink"),
                         (outside, "is a symlink")]:
        with pytest.raises(ConfigError, match=f"cannot read {named}: {shown}; gtd never follows symlinks"):
            run(named, workdir, launcher)
    assert launcher.started == []


def test_script_outside_the_workspace_may_sit_under_a_symlinked_directory(launcher, tmp_path, write_script):
    # Outside the workspace the directories are the person's own (a /home -> /var/home layout); only the file
    # itself is read without following.
    write_script({"build": [{"say": "read through the person's directory link"}]})
    (tmp_path / "mine").symlink_to(tmp_path)
    workdir = tmp_path / "ws"
    workdir.mkdir()
    assert run(tmp_path / "mine" / "script.json", workdir, launcher).text() == "read through the person's directory link"


def test_relative_script_path_is_resolved_against_the_repo(launcher, workdir):
    (workdir / "s.json").write_text(json.dumps({"build": [{"say": "relative ok"}]}))
    assert run("s.json", workdir, launcher).text() == "relative ok"


def test_embedded_demo_script_is_valid():
    validate_script(json.loads(default_script_path().read_text()))


def test_registry_scripted_uses_config_script(tmp_path):
    provider = get_provider("scripted", GtdConfig(script=str(tmp_path / "x.json")))
    assert isinstance(provider, ScriptedProvider) and provider.script_path == tmp_path / "x.json"
    assert get_provider("scripted", GtdConfig()).script_path == default_script_path()


def test_registry_auto_without_any_cli_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed
    with pytest.raises(GtdError, match="no agent CLI found") as info:
        get_provider("auto", GtdConfig())
    assert info.value.exit_code == 2


def test_agent_module_runs_standalone(workdir, write_script):
    """The CLI contract: argv + prompt on stdin -> JSON lines."""
    script = write_script({"learn": [{"when": "merge", "say": "merged"}]})
    done = subprocess.run([sys.executable, "-m", "gtd.providers.scripted_agent", "--phase", "learn", str(script)],
                          input=b"merge the learnings", capture_output=True, cwd=workdir, check=True)
    lines = [json.loads(l) for l in done.stdout.splitlines()]
    assert [l["kind"] for l in lines] == ["start", "text", "end"] and lines[1]["text"] == "merged"


@pytest.mark.bwrap
def test_inside_the_sandbox_a_denied_write_is_an_error_result(sandbox_session, tmp_path, write_script):
    """Readonly plan phase: TODO.md is writable; a new file next to it gives 'Permission denied' (the
    sealed workspace root), a protected path 'Read-only file system'."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    script = write_script({"plan": [{"actions": [
        {"write": {"path": "TODO.md", "content": "- [ ] item\n"}},
        {"write": {"path": "other.txt", "content": "nope"}},
        {"shell": "echo hook > .git/hooks/pre-commit"},
    ], "say": "planned"}]})
    session = sandbox_session(repo, level=Level.READONLY, phase=Phase.PLAN)
    result = run(script, repo, session, phase=Phase.PLAN)
    assert result.ok, result.error + result.stderr
    results = [e for e in result.events if e.kind == EventKind.TOOL_RESULT]
    assert not results[0].is_error and (repo / "TODO.md").read_text() == "- [ ] item\n"
    assert results[1].is_error and "Permission denied" in results[1].text
    assert results[2].is_error and not (repo / ".git/hooks/pre-commit").exists()
    assert not (repo / "other.txt").exists()
