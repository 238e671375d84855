"""The sandboxed command's stderr, passed through to gtd's own stderr as it comes, and kept so gtd
can find the writes the sandbox refused (the kernel's EROFS/EACCES only shows in the command's
error text). On a terminal the command gets a pseudo-terminal, so it still sees a tty (colours,
progress bars); otherwise a pipe, shared with stdout when both are the same file (`> log 2>&1`).
"""

from __future__ import annotations

import os
import sys

from gtd.background import Background

KEEP_BYTES = 256 * 1024  # the tail that is scanned for refused writes


def _same_file(a: int, b: int) -> bool:
    try:
        sa, sb = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


class StderrTap:
    def __init__(self) -> None:
        try:
            self._tty = os.isatty(sys.stderr.fileno())
        except (OSError, ValueError):
            self._tty = False
        # `> log 2>&1`: stdout and stderr are one file, so they share one pipe (and keep their order).
        self.merged = not self._tty and _same_file(1, 2)
        if self._tty:
            import pty
            import termios

            self._read, self.writer = pty.openpty()
            attrs = termios.tcgetattr(self.writer)
            attrs[1] &= ~termios.ONLCR  # pass bytes through unchanged
            termios.tcsetattr(self.writer, termios.TCSANOW, attrs)
        else:
            self._read, self.writer = os.pipe()
        self._kept = bytearray()
        self._thread = Background(self._pump)  # not waiting for it to be scheduled: gtd goes on starting the sandbox

    def started(self) -> None:
        """The command holds its copy of the write end now: close ours, so EOF comes when it exits."""
        if self.writer >= 0 and not self._tty:
            os.close(self.writer)
            self.writer = -1

    def _pump(self) -> None:
        try:
            out = sys.stderr.fileno()
        except (OSError, ValueError):
            out = 2
        while True:
            try:
                chunk = os.read(self._read, 65536)
            except OSError:  # EIO: the pty's last writer is gone
                break
            if not chunk:
                break
            try:
                os.write(out, chunk)
            except OSError:
                pass
            self._kept += chunk
            if len(self._kept) > 2 * KEEP_BYTES:
                del self._kept[:-KEEP_BYTES]

    def finish(self) -> str:
        """Everything the command wrote to stderr has been passed on; the kept tail as text."""
        if self._tty and self.writer >= 0:
            os.close(self.writer)  # with a pty, EOF (EIO) only comes once every writer is closed
            self.writer = -1
        self._thread.join(10)
        try:
            os.close(self._read)
        except OSError:
            pass
        return self._kept.decode("utf-8", "replace")
