"""Moving bytes between two connected sockets once the proxy has allowed the connection.

On Linux the bytes go socket -> pipe -> socket with splice(2): the kernel moves pages and Python
only runs once per chunk (up to the pipe's size, 1 MiB), so a download through the proxy runs near
direct loopback speed (a userspace copy through recv/send reached about half). Where splice is
refused (not Linux, a socket type the kernel cannot splice) the same loop copies through a buffer.

Both directions of a connection are relayed by the one thread that set the connection up: the
sockets are non-blocking and poll(2) says which side can move, so a connection costs no second
thread (starting one was a good part of the proxy's per-connection set-up time). A half-close is
passed on: EOF from one side becomes shutdown(SHUT_WR) on the other, and the other direction goes on.
A direction with an observer (the model API's watch, apiwatch.py) goes through a buffer, so the
observer sees every chunk before it is sent on.
"""

from __future__ import annotations

import _thread
import errno
import os
import select
import socket
from typing import Callable

CHUNK = 1024 * 1024  # bytes per splice call, and the pipe size asked for
USER_BUFSIZE = 256 * 1024
_SPLICE = getattr(os, "splice", None)  # Linux only
_SPLICE_F_NONBLOCK = getattr(os, "SPLICE_F_NONBLOCK", 2)
_REFUSED = (errno.EINVAL, errno.EOPNOTSUPP)  # the kernel cannot splice this socket
Observer = Callable[[bytes], None]


def spawn(fn, *args) -> None:
    """Run fn(*args) on a new daemon thread, without waiting for it to be scheduled: threading.Thread.start()
    waits for that, a context switch per accepted connection before the next accept()."""
    _thread.start_new_thread(fn, args)


def close_all(*sockets: socket.socket | None) -> None:
    """Close each socket that is there; an error closing one does not stop the others."""
    for s in sockets:
        if s is not None:
            try:
                s.close()
            except OSError:
                pass


def pump(a: socket.socket, b: socket.socket, *, seen_ab: Observer | None = None,
         seen_ba: Observer | None = None) -> None:
    """Copy both directions, in this thread, until both have ended; a half-close is passed on. An
    observer gets every chunk of its direction before it is sent on (the bytes then go through userspace)."""
    a.setblocking(False)
    b.setblocking(False)
    directions: list[_Direction] = []
    poller = select.poll()
    registered: dict[int, int] = {}
    try:
        directions += [_Direction(a, b, seen_ab), _Direction(b, a, seen_ba)]
        while True:
            for d in directions:
                d.move()
            wanted: dict[int, int] = {}
            for d in directions:
                if d.done:
                    continue
                if d.wants_read():
                    wanted[d.src_fd] = wanted.get(d.src_fd, 0) | select.POLLIN
                if d.pending:
                    wanted[d.dst_fd] = wanted.get(d.dst_fd, 0) | select.POLLOUT
            if not wanted:
                return  # both directions ended
            for fd in list(registered):
                if fd not in wanted:
                    poller.unregister(fd)
                    del registered[fd]
            for fd, mask in wanted.items():
                if registered.get(fd) != mask:
                    poller.register(fd, mask)
                    registered[fd] = mask
            poller.poll()
    finally:
        for d in directions:
            d.release()


class _Direction:
    """One direction of a relayed connection: reads src into a pipe (or a buffer), writes it to dst."""

    def __init__(self, src: socket.socket, dst: socket.socket, seen: Observer | None = None):
        self.src, self.dst, self.seen = src, dst, seen
        self.src_fd, self.dst_fd = src.fileno(), dst.fileno()
        self.pending = 0  # bytes read from src, not yet written to dst
        self.eof = False
        self.done = False
        self.moved = False
        self.pipe: tuple[int, int] | None = _pipe() if _SPLICE is not None and seen is None else None
        self.buffer = bytearray() if self.pipe is None else None

    def wants_read(self) -> bool:
        return not self.eof and self.pending < (CHUNK if self.pipe else USER_BUFSIZE)

    def move(self) -> None:
        """Read and write what can move now without blocking; on EOF pass the half-close on."""
        if self.done:
            return
        try:
            while True:
                progressed = False
                if self.wants_read():
                    progressed |= self._read()
                if self.pending:
                    progressed |= self._write()
                if not progressed:
                    break
        except OSError:
            self.eof, self.pending = True, 0  # reset or broken: this direction ends, the other goes on
        if self.eof and not self.pending:
            self.done = True
            try:
                self.dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _read(self) -> bool:
        if self.pipe is not None:
            try:
                n = _SPLICE(self.src_fd, self.pipe[1], CHUNK - self.pending, flags=_SPLICE_F_NONBLOCK)
            except BlockingIOError:
                return False
            except OSError as exc:
                if self.moved or exc.errno not in _REFUSED:
                    raise
                self._fall_back()
                return True
        else:
            try:
                data = self.src.recv(USER_BUFSIZE - self.pending)
            except BlockingIOError:
                return False
            if data and self.seen is not None:
                self.seen(data)
            self.buffer += data
            n = len(data)
        if n == 0:
            self.eof = True
            return False
        self.pending += n
        self.moved = True
        return True

    def _write(self) -> bool:
        try:
            if self.pipe is not None:
                n = _SPLICE(self.pipe[0], self.dst_fd, self.pending, flags=_SPLICE_F_NONBLOCK)
            else:
                n = self.dst.send(self.buffer)
                del self.buffer[:n]
        except BlockingIOError:
            return False
        self.pending -= n
        return n > 0

    def _fall_back(self) -> None:
        self.release()
        self.pipe, self.buffer = None, bytearray()

    def release(self) -> None:
        if self.pipe is not None:
            for fd in self.pipe:
                os.close(fd)
            self.pipe = None


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe2(os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
    try:
        import fcntl

        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, CHUNK)
    except (OSError, AttributeError):
        pass  # a smaller pipe only means more calls
    return read_end, write_end


def copy(src: socket.socket, dst: socket.socket, *, seen: Observer | None = None) -> None:
    """Copy src to dst until EOF or an error, then half-close dst (one direction, blocking). With
    `seen`, every chunk is shown to it first (no splice: the model API's traffic is small)."""
    try:
        # splice needs blocking descriptors (a socket with a timeout is non-blocking underneath).
        src.settimeout(None)
        dst.settimeout(None)
        if seen is not None or _SPLICE is None or not _splice_copy(src, dst, _SPLICE):
            _user_copy(src, dst, seen)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _splice_copy(src: socket.socket, dst: socket.socket, splice) -> bool:
    """Zero-copy relay; False when the kernel refuses splice before any byte moved (use the fallback)."""
    read_end, write_end = _pipe()
    try:
        src_fd, dst_fd = src.fileno(), dst.fileno()
        moved = False
        while True:
            try:
                n = splice(src_fd, write_end, CHUNK)
            except OSError as exc:
                if not moved and exc.errno in _REFUSED:
                    return False
                raise
            if n == 0:
                return True
            moved = True
            while n:
                n -= splice(read_end, dst_fd, n)
    finally:
        os.close(read_end)
        os.close(write_end)


def _user_copy(src: socket.socket, dst: socket.socket, seen: Observer | None = None) -> None:
    buf = bytearray(USER_BUFSIZE)
    view = memoryview(buf)
    while True:
        n = src.recv_into(buf)
        if not n:
            return
        if seen is not None:
            seen(bytes(view[:n]))
        dst.sendall(view[:n])
