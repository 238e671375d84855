"""One gtd run per repository at a time: a lock in gtd's per-project state dir (never in the work tree).

Two runs in one repository would build the same item and commit over each other. The lock is an
advisory `flock` on `run.lock`, which the kernel drops the moment its holder dies (even by `kill -9`):
a lock left by a killed run is taken over at once, with no pid guessing that a reused pid could fool.
The holder writes who it is (pid, command, start time) into the same file, so a refused run names it.
filelock is not used here: it truncates the file on every attempt, wiping the holder's details.
`gtd status` never takes the lock; it only reads who holds it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from gtd.errors import GtdError
from gtd.exitcodes import ExitCode
from gtd.paths import project_state_dir

LOCK_NAME = "run.lock"
_MAX_DETAILS = 4096
_TRIES = 10  # over ~0.2 s


class RepositoryBusy(GtdError):
    """Another gtd run holds this repository's lock."""

    exit_code = ExitCode.BUSY

    def __init__(self, holder: dict | None):
        self.holder = holder or {}
        super().__init__(f"another gtd run is working in this repository: {describe(self.holder)}. Wait for it to "
                         "end or stop it (Ctrl-C in its terminal, or `kill` its pid); `gtd status` works meanwhile")


def describe(holder: dict) -> str:
    """'pid 123, `gtd build`, started 2026-11-29 07:50:01 UTC (3 min ago)' from a holder's details."""
    if not holder.get("pid"):
        return "a run that is just starting (its details are not written yet)"
    started = holder.get("started")
    when = ""
    if isinstance(started, (int, float)):
        ago = max(0, int(time.time() - started))
        when = (f", started {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(started))} "
                f"({ago // 60} min {ago % 60} s ago)")
    command = " ".join(str(holder.get("command") or "gtd").split())[:200]
    return f"pid {int(holder['pid'])}, `{command}`{when}"


def _path(repo: Path) -> Path:
    return project_state_dir(repo) / LOCK_NAME


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _read(fd: int) -> dict | None:
    try:
        data = os.pread(fd, _MAX_DETAILS, 0)
        holder = json.loads(data.decode("utf-8")) if data else None
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


class RunLock:
    """The held lock; `release` (or the process's end) lets the next run in."""

    def __init__(self, fd: int, path: Path, taken_over: dict | None):
        self.fd, self.path = fd, path
        self.taken_over = taken_over  # the details a run that died holding the lock left behind

    def release(self) -> None:
        if self.fd < 0:
            return
        import fcntl

        try:
            os.ftruncate(self.fd, 0)  # an empty file is a cleanly released lock
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = -1


def acquire(repo: Path, command: str | None = None) -> RunLock:
    """Take the repository's run lock at once, or raise RepositoryBusy naming its holder."""
    import fcntl

    path = _path(repo)
    fd = _open(path)
    try:
        for attempt in range(_TRIES):  # `gtd status` probing the lock holds it shared for a moment: not a run
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == _TRIES - 1:
                    raise
                time.sleep(0.02)
    except BlockingIOError:
        holder = None
        for _ in range(20):  # a holder that has only just taken it writes its details within moments
            holder = _read(fd)
            if holder:
                break
            time.sleep(0.05)
        os.close(fd)
        raise RepositoryBusy(holder) from None
    except BaseException:
        os.close(fd)
        raise
    left = _read(fd)  # details still there: their run ended without releasing (killed)
    details = {"pid": os.getpid(), "command": command or "gtd " + " ".join(sys.argv[1:]), "started": time.time()}
    data = json.dumps(details).encode()[:_MAX_DETAILS]
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    return RunLock(fd, path, left)


def holder(repo: Path) -> dict | None:
    """Who holds the repository's lock now (None when no run does). Probed with a shared lock taken and
    dropped at once (a starting run retries past it), never waited for."""
    import fcntl

    path = _path(repo)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
