"""Signals to a sandboxed command: Ctrl-C passed on as the terminal would send it, and the kill of its
whole process group."""

from __future__ import annotations

import os
import signal
import subprocess
import time

KILL_PRESSES_SECONDS = 2.0  # three Ctrl-C this close together kill a command (`gtd sandbox run`)


class CtrlCPassedOn:
    """Each Ctrl-C reaches the command as SIGINT to its process group, as the terminal would send it
    (bwrap's new session keeps the terminal's own from reaching it): a server shuts down cleanly, an
    interactive shell keeps running. The third within KILL_PRESSES_SECONDS kills it. Counted by a handler
    installed before the command starts, not by KeyboardInterrupt: one pressed during start-up, or while
    Popen.wait pauses after a first one, would be lost. Main thread only."""

    def __init__(self, session):
        self._session = session
        self._proc: subprocess.Popen | None = None
        self._presses: list[float] = []
        self._previous = None

    def __enter__(self) -> "CtrlCPassedOn":
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # started immune (`nohup`, `cmd &`): stays so
            self._previous = signal.signal(signal.SIGINT, self._on_ctrl_c)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def to(self, proc: subprocess.Popen) -> None:
        """The command started: presses made while it was starting reach it now."""
        self._proc = proc
        if self._presses:
            self._pass_on()

    def wait(self) -> int:
        """The command's exit status, waited for so that every signal is handled at once. A signal may be
        delivered to any of gtd's threads (the proxy's, the stdio pumps'); Python runs its handler only
        when the main thread next runs, and a main thread blocked in waitpid() would not until the
        command ended: a Ctrl-C, or the SIGTERM that ends gtd through its clean-up, was then lost. The
        signal's wake-up byte ends the wait instead."""
        proc = self._proc
        try:
            wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        except AttributeError:  # macOS: no pipe2
            wake_r, wake_w = os.pipe()
            os.set_blocking(wake_r, False)
            os.set_blocking(wake_w, False)
        try:
            previous = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: its signals are not this thread's to handle
            os.close(wake_r)
            os.close(wake_w)
            return proc.wait()
        try:
            pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # not Linux >= 5.3 (or already reaped): look every 50 ms
            pidfd = None
        import select

        try:
            while proc.poll() is None:  # each pass runs the handlers of the signals that woke it
                select.select([wake_r] + ([pidfd] if pidfd is not None else []), [], [],
                              None if pidfd is not None else 0.05)
                try:
                    os.read(wake_r, 512)
                except BlockingIOError:
                    pass
        finally:
            signal.set_wakeup_fd(previous)
            for fd in (wake_r, wake_w) + ((pidfd,) if pidfd is not None else ()):
                os.close(fd)
        return proc.returncode

    def _on_ctrl_c(self, signum, frame) -> None:
        now = time.monotonic()
        self._presses = [t for t in self._presses if now - t < KILL_PRESSES_SECONDS] + [now]
        if self._proc is not None:
            self._pass_on()

    def _pass_on(self) -> None:
        if len(self._presses) >= 3:
            kill_group(self._proc)
            self._proc.kill()
        else:
            self._session.signal_command(self._proc, signal.SIGINT)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
