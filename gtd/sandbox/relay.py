"""Moving bytes between two connected sockets once the proxy has allowed the connection.

On Linux the bytes go socket -> pipe -> socket with splice(2): the kernel moves pages and Python
only loops once per chunk, so a download through the proxy runs near direct loopback speed (a
userspace copy through recv/send reached about half). Where splice is refused (not Linux, a socket
type the kernel cannot splice) the same loop runs with recv_into/sendall. Either way a half-close
is passed on: EOF from one side becomes shutdown(SHUT_WR) on the other.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
from typing import Callable

CHUNK = 1024 * 1024  # bytes per splice call, and the pipe size asked for
USER_BUFSIZE = 256 * 1024
_SPLICE = getattr(os, "splice", None)  # Linux only
Observer = Callable[[bytes], None]


def pump(a: socket.socket, b: socket.socket, *, seen_ab: Observer | None = None,
         seen_ba: Observer | None = None) -> None:
    """Copy both directions until both are closed; a half-close is passed on. An observer gets
    every chunk of its direction before it is sent on (the bytes then go through userspace)."""
    other = threading.Thread(target=copy, args=(b, a), kwargs={"seen": seen_ba}, daemon=True, name="gtd-proxy-pump")
    other.start()
    copy(a, b, seen=seen_ab)
    other.join()


def close_all(*sockets: socket.socket | None) -> None:
    """Close each socket that is there; an error closing one does not stop the others."""
    for s in sockets:
        if s is not None:
            try:
                s.close()
            except OSError:
                pass


def copy(src: socket.socket, dst: socket.socket, *, seen: Observer | None = None) -> None:
    """Copy src to dst until EOF or an error, then half-close dst. With `seen`, every chunk is shown
    to it first (no splice: the model API's traffic is small)."""
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
    read_end, write_end = os.pipe()
    try:
        try:
            import fcntl

            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, CHUNK)
        except OSError:
            pass  # a smaller pipe only means more calls
        src_fd, dst_fd = src.fileno(), dst.fileno()
        moved = False
        while True:
            try:
                n = splice(src_fd, write_end, CHUNK)
            except OSError as exc:
                if not moved and exc.errno in (errno.EINVAL, errno.EOPNOTSUPP):  # cannot splice this socket
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
