"""The live view on a real terminal: what a person sees during a long silent tool call, a test run
and an approval question that waits longer than the inactivity limit, and the summary at the end.

The scripted agent runs in the real sandbox; the limits are set low (2 s) so that the old behaviour
(a silent tool call or a person's thinking time taken for a hung agent) would stop the run.
"""

from __future__ import annotations

import json
import shutil

import pexpect
import pytest

from gtd.paths import user_config_file
from support import git, seen, uncoloured

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = ("# Counter\n\n## Action items\n- [ ] Add count.py\n  - Tests: test_count.py\n\n"
        "## Open questions\n\n## Learnings\n")
FAST_LIMITS = {"inactivitySeconds": 2, "toolSeconds": 2, "runSeconds": 120}


def _setup(repo, build_actions, **config):
    script = {"build": [{"actions": build_actions, "say": "built"}]}
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(path), **config}, indent=2))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a plan")


def test_long_silent_tool_call_and_test_run_are_shown_live_and_not_killed(repo, terminal):
    _setup(repo, [{"shell": "sleep 5; echo compiled"}, {"write": {"path": "count.py", "content": "N = 1\n"}}],
           testCommand="echo test line one; sleep 3; echo test line two; sleep 3",
           timeouts={"inactivitySeconds": 2, "runSeconds": 120})
    screen = terminal("build", cwd=repo)
    child = screen.child
    # the status line: phase, level, provider, item, elapsed time, and how to stop
    child.expect(seen("build · readwrite · scripted · Add count.py · 00:0"))
    child.expect(seen("Ctrl-C to stop"))
    # the running tool call and its command, its time still counting well past the 2 s inactivity limit
    child.expect(seen("▶ shell: sleep 5; echo compiled (00:03)"))
    # the test run, with a live tail of its output while it still runs
    child.expect(seen("▶ test command: echo test line one"))
    child.expect(seen("│ test line one"))
    child.expect(seen("│ test line two"))
    status = screen.finish()
    assert status == 0, screen.text
    text = uncoloured(screen.text)
    assert "summary (ok, " in text and "tokens" in text
    assert "committed" in text and "🔨 build: Add count.py" in text
    assert git(repo, "log", "-1", "--format=%s").strip() == "🔨 build: Add count.py"


def test_an_approval_wait_longer_than_the_inactivity_limit_never_stops_the_agent(repo, terminal, registry_port):
    """The agent's curl waits on the proxy while the question is on screen for 6 s (limits: 2 s)."""
    user = user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'[sandbox.levels.readwrite]\nallowDomains = ["127.0.0.1:{registry_port}"]\n')
    target = f"localhost:{registry_port}"
    # --noproxy '': through the proxy on purpose (NO_PROXY keeps localhost inside the sandbox).
    _setup(repo, [{"shell": f"curl --noproxy '' -sS --max-time 60 http://{target}/ > fetched.txt"}],
           timeouts=FAST_LIMITS)
    screen = terminal("build", cwd=repo)
    child = screen.child
    child.expect(seen(f"connect to {target}"))
    child.expect(seen("Decision [o/p/u/d]"))
    # Nothing redraws over the question while the person thinks, and the agent is not stopped.
    child.expect(pexpect.TIMEOUT, timeout=6)
    assert "Ctrl-C to stop" not in child.before and "no output" not in child.before, child.before
    child.sendline("o")
    status = screen.finish()
    assert status == 0, screen.text
    assert (repo / "fetched.txt").read_text() == "REGISTRY-OK"
    assert "approved: " + target in uncoloured(screen.text)


def test_an_approval_wait_during_the_test_run_does_not_count_toward_test_timeout(repo, terminal, registry_port):
    """The test command's connection waits on the proxy while the person thinks for 6 s; the tests
    are allowed 4 s and still pass (before, the wait ran the test command into its timeout)."""
    user = user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'[sandbox.levels.readwrite]\nallowDomains = ["127.0.0.1:{registry_port}"]\n')
    target = f"localhost:{registry_port}"
    _setup(repo, [{"write": {"path": "count.py", "content": "N = 1\n"}}],
           testCommand=f"curl --noproxy '' -sS --max-time 60 http://{target}/", testTimeoutSeconds=4,
           baselineTests="off")  # the question must come from the test run after the agent's step
    screen = terminal("build", cwd=repo)
    child = screen.child
    child.expect(seen(f"connect to {target}"))
    child.expect(seen("Decision [o/p/u/d]"))
    child.expect(pexpect.TIMEOUT, timeout=6)
    child.sendline("o")
    status = screen.finish()
    text = uncoloured(screen.text)
    assert status == 0, text
    assert "✓ tests pass" in text and "tests failed" not in text  # the first run passed: no re-prompt
