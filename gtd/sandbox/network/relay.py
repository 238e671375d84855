"""Moving bytes between two connected sockets once the proxy has allowed the connection.

Each direction is a blocking recv / send loop on its own thread. The loop runs in C (relay.c, loaded by
nativerelay.py from gtd's state dir) when it could be built: one ctypes call per direction, which holds no
GIL from its start to the connection's end. In Python, every chunk needed the GIL between two system calls,
and gtd's process is rarely idle (the live view redraws 8x/s, the agent's output is parsed): with one
CPU-bound thread beside the proxy, a relayed download reached 20-30 % of direct and each request/response
exchange paid +10 ms (the switch interval, 5 ms, per wait); with the C loop 54-80 % and +0.1 ms, in the
same run (benchmarks/README.md). Python keeps the rest: the policy and hand-shake, the threads, TCP_NODELAY,
and the socket objects, alive until the call returns. Without a compiler, or when the library in the state
dir is not trusted, the Python loop below relays (blocking recv_into / sendall; both release the GIL while
the kernel copies). Either way the buffer starts small (64 KiB: a conversation's messages, the upload side of a
download) and the first read that fills it switches the direction to a 4 MiB buffer, so a bulk transfer
crosses the proxy in few large reads and writes: fewer system calls and far fewer wake-ups of the proxy,
the server and the client, which is what a busy 2-core machine makes expensive. (Growing 4x at a time
left a 4 MB download at ~60-70 % of direct; switching at once, ~80-95 %, in the same runs.)

Why not splice(2) (what gtd used before): splice moves no bytes in the proxy, but passes the sender's
page layout on (a sendfile server's skbs of 4 KiB page-cache fragments), and the client then paid for
every fragment: in the same run, server + proxy + curl used ~150 ms of CPU per 128 MB relayed with
splice and ~115 ms with this copy (direct: ~110 ms), and under load the copy moved bulk data faster
(benchmarks/bench_proxy.py, benchmarks/README.md).

Small writes are sent on at once (TCP_NODELAY on the socket each direction writes to): the relay only
passes on what an endpoint already chose to send, and with Nagle's algorithm a message written in two
pieces (a request's head and body, TLS records, an ssh keystroke after another) waited for the peer's
delayed ACK: ~40-90 ms per exchange through the proxy where the direct connection took ~0.1 ms.

Threads and bulk buffers are reused (`spawn`, `_bulk_buffer`): a thread started per connection and a
fresh 4 MiB buffer per download were the proxy's largest per-connection costs after the copy itself
(set-up through CONNECT +740 -> +375 us over direct, in one run at load ~4.5). A half-close is passed
on: EOF from one side becomes shutdown(SHUT_WR) on the other, and the other direction goes on.
"""

from __future__ import annotations

import _thread
import os
import socket
import threading

SMALL_BUFSIZE = 64 * 1024  # a direction's first buffer
BULK_BUFSIZE = 4 * 1024 * 1024  # once a read filled the small one (memory per relayed direction at most)
FREE_BULK_BUFFERS = 2  # bulk buffers kept for the next connections (8 MiB at most, only pages once touched)
PARKED_THREADS = 8  # finished threads kept waiting for the next connection's work
PARKED_SECONDS = 60.0


class _Parked:
    """A finished thread waiting for its next job (a lock it blocks on, and the job handed over)."""

    __slots__ = ("wake", "job")

    def __init__(self) -> None:
        self.wake = _thread.allocate_lock()
        self.wake.acquire()
        self.job: tuple | None = None


_parked: list[_Parked] = []
_parked_lock = _thread.allocate_lock()


def _forget_parked() -> None:
    """In a forked child only the forking thread exists: a job handed to a parked thread would never run."""
    global _parked_lock
    _parked.clear()
    _parked_lock = _thread.allocate_lock()


os.register_at_fork(after_in_child=_forget_parked)


def spawn(fn, *args) -> None:
    """Run fn(*args) on another daemon thread: a parked one if there is one (a lock release wakes it),
    else a new one started without waiting for it to be scheduled (threading.Thread.start() waits for
    that, a context switch per accepted connection before the next accept())."""
    with _parked_lock:
        parked = _parked.pop() if _parked else None
    if parked is None:
        _thread.start_new_thread(_work, (fn, args))
    else:
        parked.job = (fn, args)
        parked.wake.release()


class ConnectionCap:
    """At most `limit` accepted connections served at once, each on a thread of spawn(): every one holds host
    threads for as long as its peer keeps it open, and an agent opening thousands would exhaust the person's
    thread limit (ulimit -u). Past the cap a new connection is closed at once."""

    def __init__(self, limit: int):
        self._slots = threading.BoundedSemaphore(limit)

    def spawn(self, handler, conn: socket.socket) -> None:
        if not self._slots.acquire(blocking=False):
            close_all(conn)
            return
        spawn(self._served, handler, conn)

    def _served(self, handler, conn: socket.socket) -> None:
        try:
            handler(conn)
        finally:
            self._slots.release()


def _work(fn, args) -> None:
    """Run the job, then park for the next one: a proxied connection costs two threads (its handler and
    one direction's copy), and starting one per connection was most of the proxy's own set-up time.
    At most PARKED_THREADS wait, each for at most PARKED_SECONDS; an exception ends the thread as it
    would have without reuse."""
    me = _Parked()
    while True:
        fn(*args)
        fn = args = None
        with _parked_lock:
            if len(_parked) >= PARKED_THREADS:
                return
            _parked.append(me)
        if not me.wake.acquire(timeout=PARKED_SECONDS):
            with _parked_lock:
                if me in _parked:
                    _parked.remove(me)
                    return
            me.wake.acquire()  # spawn() took this thread just as the wait ran out: its job is on the way
        (fn, args), me.job = me.job, None


def _bulk_buffer() -> bytearray:
    """A 4 MiB buffer, reused when one is free: a fresh one is page faults and zeroing on every touched
    page, per connection (about a millisecond per 4 MB, a quarter of a 4 MB download's data phase)."""
    try:
        return _free_bulk.pop()
    except IndexError:
        return bytearray(BULK_BUFSIZE)


def _return_bulk(buf: bytearray) -> None:
    if len(_free_bulk) < FREE_BULK_BUFFERS:
        _free_bulk.append(buf)


_free_bulk: list[bytearray] = []  # list.pop/append are atomic: no lock needed


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


def _send_at_once(sock: socket.socket) -> None:
    """Switch Nagle's algorithm off on a TCP socket (any other kind of socket is left as it is)."""
    if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


def copy(src: socket.socket, dst: socket.socket) -> None:
    """Copy src to dst until EOF or an error, then half-close dst (one direction, blocking): in relay.c's
    loop when it is loaded (no GIL per chunk), else in Python."""
    native = _native if _native_looked else _look_for_native()
    bulk = None
    try:
        src.settimeout(None)  # blocking: a socket dialled with a timeout is non-blocking underneath
        dst.settimeout(None)
        _send_at_once(dst)
        if native is not None:
            native(src.fileno(), dst.fileno(), SMALL_BUFSIZE, BULK_BUFSIZE)  # half-closes dst itself
            return
        buf = bytearray(SMALL_BUFSIZE)
        view = memoryview(buf)
        while n := src.recv_into(buf):
            dst.sendall(view[:n])
            if n == SMALL_BUFSIZE and bulk is None:  # a full read: bulk data is queued
                buf = bulk = _bulk_buffer()
                view = memoryview(buf)
    except OSError:
        pass
    finally:
        if native is None:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if bulk is not None:
            view.release()
            _return_bulk(bulk)


_native = None  # relay.c's copy loop (nativerelay.py), once loaded
_native_looked = False  # the state dir is looked at once per process, at the first relayed connection
_native_lock = _thread.allocate_lock()


def _look_for_native():
    """At the first relayed connection: load relay.c's loop if it is built (a millisecond), else build it
    in the background (the Python loop relays until then)."""
    global _native_looked
    with _native_lock:
        if not _native_looked:
            _native_looked = True
            if not use_native(build=False):
                spawn(use_native)
    return _native


def use_native(build: bool = True) -> bool:
    """Load relay.c's loop from gtd's state dir for every later connection (built there first if `build`
    and needed); True when it is in use. Any failure leaves the Python loop in use."""
    global _native
    from gtd.sandbox.network import nativerelay

    with _build_lock:
        if _native is None:
            try:
                path = nativerelay.library_path()
                _native = nativerelay.load((build and nativerelay.build()) or path)
            except OSError:
                pass
    return _native is not None


_build_lock = _thread.allocate_lock()


def in_use() -> str:
    """Which copy loop relays new connections: "native" (relay.c) or "python"."""
    return "native" if _native is not None else "python"
