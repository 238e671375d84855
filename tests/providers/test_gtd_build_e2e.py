"""`gtd build` through the real CLI with each real agent CLI (claude, opencode, pi) against the fake
model server, inside the real sandbox: a build step that lands, a forbidden tool that stops the whole
agent, an API failure surfaced as an error, and a test failure re-prompted until the fix lands."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fakemodel.server import say, shell, tool
from gtd.exitcodes import ExitCode
from gtd.prompts import render
from gtd.providers.guard import INTERACTIVE_TOOLS
from support import explain, git, run_gtd

pytestmark = pytest.mark.e2e

ITEM = "Create hello.txt saying hi"
PLAN_TITLE = "Hello file"
PLAN = f"""# {PLAN_TITLE}

## Action items
- [ ] {ITEM}
  - Tests: `cat hello.txt` succeeds

## Open questions

## Learnings
"""
# `cat` (not `test -f`) so a failure has output the re-prompt must carry to the model.
TEST_COMMAND = "cat hello.txt"
MISSING = "hello.txt: No such file or directory"
BUILD_COMMIT = f"🔨 build: {ITEM}"
PLAN_COMMIT = f"📝 plan: {PLAN_TITLE}"
GTD_TIMEOUT = 300  # seconds for one `gtd build` (the CLIs start slowly on a shared machine)


@pytest.fixture
def planned(repo):
    """The shared `repo` (one commit) with gtd configured and a valid plan committed as a plan step."""
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": TEST_COMMAND, "testRetries": 1, "baselineTests": "build",
                                                  "timeouts": {"inactivitySeconds": 120, "runSeconds": 240}}))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", PLAN_COMMIT)
    return repo


def gtd_build(agent, repo) -> subprocess.CompletedProcess:
    args = ["build", "--provider", agent.name]
    if agent.model:
        args += ["--model", agent.model]
    return run_gtd(*args, cwd=repo, timeout=GTD_TIMEOUT)  # env: os.environ, pointed at the fake server


def subjects(repo) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def prompts_seen(fake_model) -> str:
    return "\n".join(json.dumps(r.body) for r in fake_model.main_requests())


def assert_built(repo) -> None:
    assert subjects(repo)[:2] == [BUILD_COMMIT, PLAN_COMMIT]
    assert f"- [x] {ITEM}" in git(repo, "show", "HEAD:TODO.md")
    assert git(repo, "show", "HEAD:hello.txt") == "hi\n"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert_no_stray_dirs(repo)


def assert_no_stray_dirs(repo) -> None:
    """Nothing git cannot see is left behind either (issue 24: an empty `.opencode/` after an opencode run)."""
    empty = [str(d.relative_to(repo)) for d, dirs, files in ((Path(p), ds, fs) for p, ds, fs in os.walk(repo))
             if ".git" not in d.relative_to(repo).parts and not dirs and not files]
    assert not empty and not os.path.lexists(repo / ".opencode"), empty


def test_build_step_lands(agent, planned, fake_model):
    fake_model.script([shell("echo hi > hello.txt"), say("Created hello.txt.")])
    result = gtd_build(agent, planned)
    assert result.returncode == 0, explain(result)
    assert_built(planned)
    # The write watch (gtd/sandbox/linux/write_watch.py) sees every write the CLI makes: none is refused.
    assert "refused write" not in result.stderr and "refused write" not in result.stdout, explain(result)
    first = json.dumps(fake_model.main_requests()[0].body)
    assert ITEM in first and f"`{TEST_COMMAND}`" in first  # the build prompt
    system = render("system_build").split("\n")[0]
    assert json.dumps(system)[1:-1] in first  # the build system prompt (as JSON-escaped text)


def test_forbidden_tool_stops_the_whole_agent(agent, planned, fake_model):
    name = agent.interactive_tool
    if name is None:
        # pi has no interactive tool at all (no question/plan tool in its pinned catalog), so no call
        # of pi's could be forbidden: gtd's guard list for pi is empty, and the guard's handling of pi's
        # event stream is proven in test_agents_e2e with a test-only catalog gtd's CLI cannot take.
        assert INTERACTIVE_TOOLS["pi"] == frozenset()
        pytest.skip("pi has no interactive tools: nothing it can call is forbidden")
    marker = f"gtd-e2e-sleeper-{planned.parent.name}"
    fake_model.script([
        # a background child of the agent that would outlive a kill of the agent's pid alone
        shell(f"nohup sh -c 'sleep 600; : {marker}' >/dev/null 2>&1 & echo sleeper-$((6 * 7))"),
        tool(name, {"questions": [{"question": "Which one?", "header": "Pick", "multiSelect": False,
                                   "options": [{"label": "a", "description": "a"},
                                               {"label": "b", "description": "b"}]}]}),
        shell("echo hi > hello.txt"), say("done"),
    ])
    result = gtd_build(agent, planned)
    assert result.returncode == ExitCode.FORBIDDEN_TOOL, explain(result)
    assert f"interactive tool '{name}'" in result.stderr, explain(result)
    assert subjects(planned)[0] == PLAN_COMMIT  # nothing committed
    assert not (planned / "hello.txt").exists()  # the calls after the forbidden one never ran
    assert "sleeper-42" in prompts_seen(fake_model)  # the sleeper really was started (its output came back)
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    left = [line for line in ps.splitlines() if marker in line or str(planned) in line]
    assert not left, "agent processes outlived gtd:\n" + "\n".join(left)


@pytest.mark.parametrize("status,message", [(500, "fake overload"), (401, "invalid x-api-key (fake)")])
def test_api_failure_is_an_error(agent, planned, fake_model, status, message):
    fake_model.fail(status, message)
    result = gtd_build(agent, planned)
    assert result.returncode == ExitCode.FAILURE, explain(result)
    assert f"the agent ({agent.name}) failed in build" in result.stderr, explain(result)
    assert subjects(planned)[0] == PLAN_COMMIT
    assert fake_model.requests  # it did reach the fake server


def test_failing_tests_reprompt_with_the_output_then_the_fix_lands(agent, planned, fake_model):
    fake_model.script([shell("echo hi > wrong.txt"), say("Created the file.")])
    fake_model.on_prompt(MISSING, [shell("echo hi > hello.txt && rm wrong.txt"), say("Fixed: hello.txt now exists.")])
    result = gtd_build(agent, planned)
    assert result.returncode == 0, explain(result)
    assert "tests failed (attempt 1 of 2)" in result.stderr
    assert_built(planned)
    seen = prompts_seen(fake_model)
    assert f"The test command `{TEST_COMMAND}` failed (attempt 1 of 2)" in seen and MISSING in seen


def test_token_totals_sum_every_model_request(agent, planned, fake_model):
    """Issue 24: the tokens gtd shows are the sum over every request of the run, not the last one
    (opencode reports each step of its loop apart: `step_finish` with reason `tool-calls`), over two runs
    of the agent: the failing tests' re-prompt resumes its session."""
    fake_model.script([shell("echo hi > wrong.txt"), shell("cat wrong.txt"), say("Created the file.")])
    fake_model.on_prompt(MISSING, [shell("echo hi > hello.txt && rm wrong.txt"), say("Fixed: hello.txt now exists.")])
    fake_model.report_usage(lambda n: (1000 * n + n, 10 * n + 1))  # a different, known count per request
    result = run_gtd("build", "--json", "--provider", agent.name, *(["--model", agent.model] if agent.model else []),
                     cwd=planned, timeout=GTD_TIMEOUT)
    assert result.returncode == 0, explain(result)
    assert_built(planned)
    assert "tests failed (attempt 1 of 2)" in result.stderr
    reported = fake_model.usage_reported
    assert len(reported) >= 5, reported
    sums = {"input": sum(i for i, _ in reported), "output": sum(o for _, o in reported)}
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    phase_end = next(e for e in events if e["event"] == "phase_end" and e["phase"] == "build")
    run_end = next(e for e in events if e["event"] == "run_end")
    assert phase_end["tokens"] == sums and run_end["tokens"] == sums, (reported, phase_end, run_end)


def test_a_stopped_build_resumes_the_agents_own_session_in_the_next_run(agent, planned, fake_model):
    """Issue 24: a build stopped with the agent's work half done (tests red, no retry left) is carried on by
    the next `gtd build` in the agent's own session, resumed by its CLI (claude --resume, opencode and pi
    --session): the model sees its earlier turn, and the step lands as one 🔨 with no 🔧 fix."""
    config = json.loads((planned / ".gtdrc.json").read_text())
    (planned / ".gtdrc.json").write_text(json.dumps({**config, "testRetries": 0}))
    git(planned, "commit", "-q", "--amend", "-a", "--no-edit")
    fake_model.script([shell("echo half > half.txt"), say("Half done, more to come.")])
    fake_model.on_prompt("Carry on", [shell("echo hi > hello.txt"), say("Done.")])
    stopped = gtd_build(agent, planned)
    assert stopped.returncode == 1 and "tests still fail after 1 attempt(s)" in stopped.stderr, explain(stopped)
    assert json.loads(run_gtd("status", "--json", cwd=planned).stdout)["agent_work"]["paths"] == ["half.txt"]

    done = gtd_build(agent, planned)
    assert done.returncode == 0, explain(done)
    assert f"resuming its {agent.name} session" in done.stderr and "could not resume" not in done.stderr
    assert subjects(planned)[:2] == [BUILD_COMMIT, PLAN_COMMIT]
    assert git(planned, "show", "--name-only", "--format=", "HEAD").split() == ["TODO.md", "half.txt", "hello.txt"]
    carried_on = [json.dumps(r.body) for r in fake_model.main_requests() if "Carry on" in json.dumps(r.body)]
    assert carried_on and "Half done, more to come." in carried_on[0]  # the resumed session's own history
