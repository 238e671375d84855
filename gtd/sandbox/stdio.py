"""Standard streams that give the sandbox nothing beyond the stream itself.

A descriptor inherited from the host is more than a stream: `/proc/self/fd/N` reopens the file it
points at with the *file's* permissions, not the descriptor's mode. A regular file given as stdin
(`gtd sandbox run -- CMD < notes.txt`) could be reopened for writing and overwritten; an output file
could be truncated or rewritten from offset 0. So any standard stream that is a regular file, a named
FIFO, a block device, a directory or a character device other than a terminal or /dev/null reaches
the command as a pipe that gtd pumps: the command reads exactly the input and appends exactly its
output, and holds nothing it could reopen. Anonymous pipes, sockets, /dev/null and terminals are
passed as they are (reopening them gives nothing new; a terminal stays interactive).
"""

from __future__ import annotations

import os
import stat
import threading

from gtd.record import field, record

CHUNK = 1 << 16


def needs_relay(fd: int) -> bool:
    """True when the command could reopen `fd` through /proc/self/fd as something more than a stream."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    mode = st.st_mode
    if stat.S_ISSOCK(mode):
        return False
    if stat.S_ISFIFO(mode):  # an anonymous pipe reopens as itself; a named FIFO is a host path
        try:
            return not os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
        except OSError:
            return True
    if stat.S_ISCHR(mode):
        return not (os.isatty(fd) or st.st_rdev == _devnull_rdev())
    return True  # regular file, directory, block device


def _devnull_rdev() -> int:
    try:
        return os.stat("/dev/null").st_rdev
    except OSError:
        return -1


def _fd_of(stream, default: int) -> int | None:
    """The host descriptor behind a Popen stdio argument, or None for PIPE/DEVNULL/STDOUT."""
    if stream is None:
        return default
    if isinstance(stream, int):
        return stream if stream >= 0 else None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):
        return None


@record
class StdioRelay:
    """The stdio arguments to hand Popen, plus the pumps that feed and drain them."""

    stdin: object = None
    stdout: object = None
    stderr: object = None
    _child_ends: list[int] = field(default_factory=list)
    _pumps: list[threading.Thread] = field(default_factory=list)
    _outputs: list[threading.Thread] = field(default_factory=list)

    def started(self) -> None:
        """Call once the child exists: drop the parent's copy of the child's ends, start pumping."""
        for fd in self._child_ends:
            os.close(fd)
        self._child_ends.clear()
        for t in self._pumps:
            t.start()

    def abandon(self) -> None:
        """The child never started: close everything."""
        for fd in self._child_ends:
            os.close(fd)
        self._child_ends.clear()

    def join(self, timeout: float | None = 10.0) -> None:
        """Wait until the command's output has reached its destination (its pipes reach EOF with it)."""
        for t in self._outputs:
            t.join(timeout)


def relay_stdio(stdin=None, stdout=None, stderr=None) -> StdioRelay:
    """Replace each reopenable standard stream with a pipe gtd pumps (see the module docstring)."""
    relay = StdioRelay(stdin, stdout, stderr)
    fd = _fd_of(stdin, 0)
    if fd is not None and needs_relay(fd):
        r, w = os.pipe()
        relay.stdin = r
        relay._child_ends.append(r)
        relay._pumps.append(threading.Thread(target=_pump, args=(os.dup(fd), w), daemon=True, name="gtd-stdin"))
    shared: dict[tuple[int, int], int] = {}
    for name, default in (("stdout", 1), ("stderr", 2)):
        fd = _fd_of(getattr(relay, name), default)
        if fd is None or not needs_relay(fd):
            continue
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if key in shared:  # `> log 2>&1`: one pipe keeps the two streams in order
            setattr(relay, name, shared[key])
            continue
        r, w = os.pipe()
        shared[key] = w
        setattr(relay, name, w)
        relay._child_ends.append(w)
        t = threading.Thread(target=_pump, args=(r, os.dup(fd)), daemon=True, name=f"gtd-{name}")
        relay._pumps.append(t)
        relay._outputs.append(t)
    return relay


def _pump(src: int, dst: int) -> None:
    """Copy src to dst until EOF (or until the reader of dst is gone); close both."""
    try:
        while True:
            data = os.read(src, CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                view = view[os.write(dst, view):]
    except OSError:
        pass
    finally:
        os.close(src)
        os.close(dst)

