"""Moving bytes between two connected sockets once the proxy has allowed the connection.

On Linux the bytes go socket -> pipe -> socket with splice(2): the kernel moves pages and Python
only runs once per chunk (up to the pipe's size, 1 MiB), so a download through the proxy runs near
direct loopback speed (a userspace copy through recv/send reached about half). Where splice is
refused (not Linux, a socket type the kernel cannot splice) the same loop copies through a buffer.

Each direction blocks in splice on its own thread: a blocking splice sleeps in the kernel until bytes
come, which moved bulk data ~10 points of direct speed faster than a poll loop over non-blocking
sockets in one thread (benchmarks/bench_proxy.py). The second thread is started without waiting for
it to be scheduled. A half-close is passed on: EOF from one side becomes shutdown(SHUT_WR) on the
other, and the other direction goes on.
"""

from __future__ import annotations

import _thread
import errno
import os
import socket
import threading

CHUNK = 1024 * 1024  # bytes per splice call, and the pipe size asked for
USER_BUFSIZE = 256 * 1024
_SPLICE = getattr(os, "splice", None)  # Linux only
_REFUSED = (errno.EINVAL, errno.EOPNOTSUPP)  # the kernel cannot splice this socket


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


def pump(a: socket.socket, b: socket.socket) -> None:
    """Copy both directions until both have ended; a half-close is passed on. b -> a runs on a thread
    started without waiting for it, a -> b in this one."""
    finished = threading.Lock()
    finished.acquire()

    def other() -> None:
        try:
            copy(b, a)
        finally:
            finished.release()

    spawn(other)
    copy(a, b)
    finished.acquire()


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe2(os.O_CLOEXEC) if hasattr(os, "pipe2") else os.pipe()
    try:
        import fcntl

        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, CHUNK)
    except (OSError, AttributeError):
        pass  # a smaller pipe only means more calls
    return read_end, write_end


def copy(src: socket.socket, dst: socket.socket) -> None:
    """Copy src to dst until EOF or an error, then half-close dst (one direction, blocking)."""
    try:
        # splice needs blocking descriptors (a socket with a timeout is non-blocking underneath).
        src.settimeout(None)
        dst.settimeout(None)
        if _SPLICE is None or not _splice_copy(src, dst, _SPLICE):
            _user_copy(src, dst)
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


def _user_copy(src: socket.socket, dst: socket.socket) -> None:
    buf = bytearray(USER_BUFSIZE)
    view = memoryview(buf)
    while True:
        n = src.recv_into(buf)
        if not n:
            return
        dst.sendall(view[:n])
