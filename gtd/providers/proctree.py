"""The agent's process tree, read from /proc on the host: a tool the CLI has not announced.

opencode emits a tool's event only when the tool has ended, so a long silent tool (a `sleep 25`, an
install, a test run) looks like a hung model. What it does while the tool runs is visible in its
process tree instead: a process that the agent's tree started since its current step began (its
last `step_start`), still alive, is a tool at work. Processes from earlier steps (a server a tool
left in the background) started before that moment and do not count.
"""

from __future__ import annotations

import os
import time

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def boot_clock() -> float:
    """Seconds since boot on the clock /proc's process start times use (CLOCK_BOOTTIME)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _stat(pid: str) -> tuple[int, str, float] | None:
    """(parent pid, state, start time in seconds since boot) of one process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = data[data.rfind(")") + 2:].split()  # the name in parentheses may hold spaces
    try:
        return int(fields[1]), fields[0], int(fields[19]) / _TICKS
    except (IndexError, ValueError):
        return None


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return "?"
    if len(argv) >= 3 and os.path.basename(argv[0]) in ("sh", "bash", "dash", "zsh") and argv[1] == "-c":
        return argv[2]  # the tool's command line, not the shell running it
    return " ".join(argv) or "?"


def started_since(root: int, since: float) -> tuple[int, str] | None:
    """The first live process under `root` (not `root` itself) started at or after `since` (boot_clock()
    seconds), as (pid, command line); None if there is none or /proc cannot be read."""
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    children: dict[int, list[tuple[int, str, float]]] = {}
    for pid in pids:
        stat = _stat(pid)
        if stat is not None:
            children.setdefault(stat[0], []).append((int(pid), stat[1], stat[2]))
    found: list[tuple[float, int]] = []
    todo = [root]
    seen = {root}
    while todo:
        for pid, state, started in children.get(todo.pop(), []):
            if pid in seen:
                continue
            seen.add(pid)
            todo.append(pid)
            if started > since - 1 / _TICKS and state not in ("Z", "X"):  # start times are whole ticks
                found.append((started, pid))
    if not found:
        return None
    _, pid = min(found)
    return pid, _command(pid)


def alive_since(pid: int, since: float) -> bool:
    """Whether `pid` is still the live process started at or after `since` (not a reused pid)."""
    stat = _stat(str(pid))
    return stat is not None and stat[1] not in ("Z", "X") and stat[2] > since - 1 / _TICKS
