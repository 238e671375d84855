"""The launcher's own go from gtd, under bubblewrap: a command never starts once gtd is gone.

bwrap's `--block-fd` goes on at end of file, so a gtd killed mid-start (SIGKILL, a crash) let its sandbox
run the command all the same. Its namespace init then never died: bwrap sets that init's parent-death
signal only after forking it, against a parent (bwrap's first process, itself killed with gtd) that may
be gone by then, and the init waited for the command for ever (`sleep 1000` was left running). So the
launcher inside (launch.c / launch.py `--hold FD`) says it runs, one byte on a socket, and waits for one
byte back before it applies anything; at end of file (gtd is gone) it exits 126: the init's only child
ends, and with it the init and its namespace. gtd answers from a thread once bwrap was let go: waiting for
the launcher to say it runs first means bwrap's init has set its parent-death signal while gtd lived.
"""

from __future__ import annotations

import socket

from gtd.background import Background


class StartHold:
    """One per sandboxed command: `fd` goes to bwrap (pass_fds), `launcher_args()` to the launcher;
    `started()` once bwrap runs (gtd's copy of the launcher's end closed); `release()` once bwrap may go on."""

    def __init__(self):
        self._mine, self._theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)  # close-on-exec
        self.fd = self._theirs.fileno()
        self._released = False

    def launcher_args(self) -> list[str]:
        return ["--hold", str(self.fd)]

    def started(self) -> None:
        self._theirs.close()

    def release(self) -> None:
        """Answer the launcher when it says it runs (a thread: popen does not wait for the launcher)."""
        self._released = True
        Background(self._answer)

    def close(self) -> None:
        """No launcher will be answered (none runs for this command, or the start failed); after release()
        nothing: the thread closes gtd's end once it has answered."""
        self._theirs.close()
        if not self._released:
            self._mine.close()

    def _answer(self) -> None:
        try:
            if self._mine.recv(1):  # end of file: bwrap or the launcher died first
                self._mine.sendall(b"1")
        except OSError:
            pass
        finally:
            self._mine.close()
