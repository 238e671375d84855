"""gtd SIGKILLed while a sandbox starts leaves no process behind (gtd/sandbox/linux/start_hold.py).

bwrap's --block-fd goes on at end of file: a gtd killed before it let bwrap go used to leave the command
running under a namespace init that waited for it for ever (its parent-death signal set too late). Each
run's processes are found by a marker only that run's argv holds (the command's, copied into bwrap's)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox_support import requires_bwrap

pytestmark = [pytest.mark.bwrap, requires_bwrap]

GTD = Path(sys.executable).with_name("gtd")


def _processes(marker: str) -> list[tuple[int, str]]:
    """(pid, argv) of every live process whose argv holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if marker in argv and state not in ("Z", "X"):
            found.append((int(pid), argv[:120]))
    return found


def _start(repo: Path) -> tuple[subprocess.Popen, str]:
    marker = f"{1000 + random.random():.9f}"  # `sleep 1000.123456789`: this run's alone
    proc = subprocess.Popen([str(GTD), "sandbox", "run", "--level", "readwrite", "--", "sleep", marker], cwd=repo,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, marker


def _killed_leaves_nothing(proc: subprocess.Popen, marker: str) -> None:
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while _processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _processes(marker)
    for pid, _ in left:  # never leave them to the next test
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert left == [], left


@pytest.mark.parametrize("delay_ms", [0, 50, 100, 150, 200, 250, 300, 400])
def test_gtd_killed_at_any_point_of_the_start_leaves_no_process(repo, delay_ms):
    proc, marker = _start(repo)
    time.sleep(delay_ms / 1000)
    _killed_leaves_nothing(proc, marker)


def test_gtd_killed_while_bwrap_waits_to_be_let_go_leaves_no_process(repo):
    """The moment that left them: bwrap's namespace is made (its child is there) and waits for gtd's go."""
    proc, marker = _start(repo)
    deadline = time.monotonic() + 30
    while len([argv for _, argv in _processes(marker) if "bwrap" in argv.split(" ", 1)[0]]) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, "bwrap never started"
        time.sleep(0.001)
    _killed_leaves_nothing(proc, marker)


@pytest.mark.parametrize("launcher", ["native", "python"])
def test_the_launcher_runs_nothing_until_gtd_says_go_and_nothing_once_gtd_is_gone(launcher, tmp_path):
    import socket

    from support import launcher_command

    prefix = launcher_command(launcher)
    ran = tmp_path / "ran"
    for answer in (b"1", None):  # gtd's go, then gtd gone (its end closed unanswered)
        mine, theirs = socket.socketpair()
        proc = subprocess.Popen([*prefix, "--hold", str(theirs.fileno()), "--", "touch", str(ran)],
                                pass_fds=(theirs.fileno(),))
        theirs.close()
        assert mine.recv(1) == b"r"  # it says it runs, and waits
        time.sleep(0.1)
        assert not ran.exists()
        if answer is not None:
            mine.sendall(answer)
        mine.close()
        assert proc.wait(10) == (0 if answer else 126)
        assert ran.exists() is bool(answer)
        ran.unlink(missing_ok=True)
