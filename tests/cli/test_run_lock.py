"""Two gtd runs in one repository (issue 24, item 10): the second is refused at once with exit 7 and a
message naming the run that holds the repository; `gtd status` keeps working; a lock left by a killed
run is taken over. Real processes: the first run's scripted agent sleeps inside the sandbox."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from support import agent_work_recorded, git, run_gtd

from gtd import runlock
from gtd.exitcodes import ExitCode

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

PLAN = "# Slow\n\n## Action items\n- [ ] Take a long time\n  - Tests: none\n\n## Open questions\n\n## Learnings\n"


def planned_with_a_slow_build(repo) -> str:
    marker = f"sleep {500 + os.getpid() % 10000}.25"
    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
              "build": [{"actions": [{"write": {"path": "half.txt", "content": "partial"}}, {"shell": marker}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json")}))
    (repo / "TODO.md").write_text("# Slow\n")
    subprocess.run([sys.executable, "-m", "gtd", "plan"], cwd=repo, check=True, capture_output=True)
    return marker


def wait_for(marker: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        if any(marker in line and "ps -eo" not in line for line in out.splitlines()):
            return
        time.sleep(0.1)
    raise AssertionError(f"the agent's `{marker}` never started")


def test_a_second_run_is_refused_and_status_names_the_first(repo):
    marker = planned_with_a_slow_build(repo)
    before = git(repo, "log", "--format=%s")
    first = subprocess.Popen([sys.executable, "-m", "gtd", "build"], cwd=repo, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(marker)
        agent_work_recorded(repo, ["half.txt"])  # the running agent's write, recorded once gtd has read its result
        started = time.monotonic()
        second = run_gtd("build", cwd=repo, timeout=60)
        assert time.monotonic() - started < 15  # refused at once, not after building the same item
        assert second.returncode == ExitCode.BUSY == 7, second.stderr
        assert f"pid {first.pid}" in second.stderr
        assert "`gtd build`" in second.stderr or "gtd build" in second.stderr
        assert re.search(r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", second.stderr)
        assert "gtd status" in second.stderr  # what still works meanwhile
        assert "the agent changed nothing" not in second.stderr
        events = run_gtd("build", "--json", cwd=repo, timeout=60)
        assert events.returncode == 7
        end = json.loads(events.stdout.splitlines()[-1])
        assert (end["event"], end["status"], end["exit_code"], end["holder"]["pid"]) == ("run_end", "busy", 7, first.pid)

        status = run_gtd("status", cwd=repo, timeout=60)
        assert status.returncode == 0, status.stderr
        assert f"running: another gtd run is working in this repository: pid {first.pid}" in status.stdout
        status_json = json.loads(run_gtd("status", "--json", cwd=repo, timeout=60).stdout)
        assert status_json["running"]["pid"] == first.pid
        assert status_json["agent_work"]["paths"] == ["half.txt"]  # recorded as the running agent wrote it
        assert "agent's work: half.txt -> the build agent's work in progress (a run is going on)" in status.stdout
        assert status_json["next"] == "build"
    finally:
        first.send_signal(signal.SIGKILL)  # a run killed outright: it cannot release its lock
        first.communicate(timeout=60)
    assert git(repo, "log", "--format=%s") == before  # the refused run committed nothing

    # The kernel dropped the killed run's lock: status no longer names it, and the next run takes it over.
    assert "running:" not in run_gtd("status", cwd=repo, timeout=60).stdout
    lock = runlock.acquire(repo, "gtd test")
    try:
        assert lock.taken_over and lock.taken_over["pid"] == first.pid
        with pytest.raises(runlock.RepositoryBusy, match=f"pid {os.getpid()}, `gtd test`"):
            runlock.acquire(repo, "gtd other")
    finally:
        lock.release()
    again = runlock.acquire(repo, "gtd test")  # a cleanly released lock leaves nothing to take over
    assert again.taken_over is None
    again.release()


def test_a_killed_runs_lock_is_taken_over_with_one_line(repo):
    """A real run after a killed one goes ahead and says once whose lock it took over."""
    planned_with_a_slow_build(repo)
    dead = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    path = runlock._path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": dead.pid, "command": "gtd build", "started": time.time() - 90}))
    dead.kill()
    dead.wait()
    done = run_gtd("status", cwd=repo, timeout=60)
    assert "running:" not in done.stdout  # the details alone hold nothing: no process has the lock
    (repo.parent / "script.json").write_text(json.dumps({"plan": [], "build": [], "learn": []}))
    done = run_gtd("learn", cwd=repo, timeout=120)  # any workflow command takes the lock
    assert f"(pid {dead.pid}, `gtd build`" in done.stderr and "taken over" in done.stderr, done.stderr
    assert done.returncode != ExitCode.BUSY
    assert runlock.holder(repo) is None  # released at its end


def test_status_probing_the_lock_never_refuses_a_starting_run(repo):
    """`gtd status` (runlock.holder) takes the lock shared for a moment: a run starting meanwhile is not refused."""
    import fcntl

    from gtd.runlock import _path

    path = _path(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a probe in progress
    try:
        import threading

        threading.Timer(0.05, lambda: fcntl.flock(fd, fcntl.LOCK_UN)).start()  # ... that ends at once
        lock = runlock.acquire(repo, "gtd build")
    finally:
        os.close(fd)
    assert runlock.holder(repo)["command"] == "gtd build"
    lock.release()
    assert runlock.holder(repo) is None
