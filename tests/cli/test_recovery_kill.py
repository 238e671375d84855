"""Recovery after `kill -9` of gtd mid-build (issue 24, item 2): gtd recorded the agent's work tree as the
agent ran, so the next run knows the half-done files are the agent's. It carries them on (the agent's
session resumed), commits one 🔨, makes no 🔧 fix, and its messages agree with each other."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from support import agent_work_recorded, git, run_gtd

from gtd.audit import AuditLog

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

PLAN = "# Two halves\n\n## Action items\n- [ ] Write both halves\n  - Tests: the test command\n\n" \
       "## Open questions\n\n## Learnings\n"


def agent_processes(marker: str) -> list[int]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if marker in line and "ps -eo" not in line]


@pytest.mark.parametrize("stopped_with", ["scripted", "claude", "refused"])
def test_kill_9_mid_build_then_the_next_run_carries_the_agents_work_on(repo, stopped_with):
    """`claude`: the stopped run's record names another CLI, whose session this one cannot resume: a fresh
    session is told what is already there and given the whole task. `refused`: the resumed session fails
    (no turn of the script answers the short carry-on prompt), and a fresh session carries on instead."""
    marker = f"sleep {600 + os.getpid() % 10000}.25"
    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
              "build": [{"when": ["Carry on", "half.txt"] + (["## The whole plan (TODO.md)"] if stopped_with != "scripted"
                                                             else []),
                         "actions": [{"write": {"path": "second.txt", "content": "2\n"}}]},
                        {"when": "Implement these action item(s)",
                         "actions": [{"write": {"path": "half.txt", "content": "1\n"}}, {"shell": marker}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json"),
                                                  "testCommand": "test -f half.txt && test -f second.txt",
                                                  "testRetries": 0, "baselineTests": "off"}))
    (repo / "TODO.md").write_text("# Two halves\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    planned = git(repo, "log", "--format=%s").splitlines()

    gtd = subprocess.Popen([sys.executable, "-m", "gtd", "build"], cwd=repo, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not agent_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert agent_processes(marker), "the agent's shell command should be running"
        agent_work_recorded(repo, ["half.txt"])  # gtd has read the write's result (and recorded the tree) before it is killed
    finally:
        gtd.send_signal(signal.SIGKILL)  # no clean-up of gtd's runs: only what it recorded as it went
        gtd.wait()
    for pid in agent_processes(marker):  # whatever of the sandbox outlived gtd
        with contextlib.suppress(ProcessLookupError):  # (it may end on its own meanwhile)
            os.kill(pid, signal.SIGKILL)
    assert (repo / "half.txt").read_text() == "1\n"

    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["agent_work"]["paths"] == ["half.txt"] and status["pending_edits"] is None
    assert status["agent_work"]["stopped"] == "gtd was killed while the agent ran"
    assert "the build phase's unfinished work (stopped: gtd was killed while the agent ran): the next build " \
           "carries it on" in run_gtd("status", cwd=repo).stdout
    if stopped_with == "claude":
        from gtd.paths import project_state_dir
        from gtd.workflow import leftovers

        record = project_state_dir(repo) / leftovers.MARKER
        record.write_text(json.dumps({**json.loads(record.read_text()), "provider": "claude"}))

    done = run_gtd("build", cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "carrying on with the agent's unfinished work (half.txt; stopped: gtd was killed while the agent ran)" + \
        (", in a fresh session" if stopped_with == "claude" else ", resuming its scripted session") in done.stderr
    assert ("could not resume the stopped agent session" in done.stderr) == (stopped_with == "refused")
    assert "its lock is taken over" in done.stderr  # the killed run's lock, said once
    assert "🔧" not in done.stderr and "nothing was committed" not in done.stderr
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[0] == "🔨 build: Write both halves" and subjects[1:] == planned
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["TODO.md", "half.txt", "second.txt"]
    assert git(repo, "status", "--porcelain") == ""
    runs = [e for e in AuditLog(repo).read() if e["event"] == "agent_run" and e.get("phase") == "build"]
    resumed = [bool(run.get("resume")) for run in runs]
    assert resumed == {"scripted": [False, True], "claude": [False, False], "refused": [False, True, False]}[stopped_with]
