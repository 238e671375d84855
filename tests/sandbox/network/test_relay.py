"""The proxy's byte relay (sandbox/network/relay.py): every byte arrives in order, both ways, whatever size the
buffer has grown to, a half-close is passed on either way, and a slow reader loses nothing; with relay.c's
loop (built with this machine's compiler) and with the Python one. The C library is only ever loaded from
gtd's state dir, and only a regular file of this user's that no one else can write."""

from __future__ import annotations

import hashlib
import os
import socket
import shutil
import stat
import threading
from pathlib import Path

import pytest

from gtd.sandbox import nativebuild
from gtd.sandbox.network import nativerelay, relay


@pytest.fixture(autouse=True, scope="module")
def looked_once():
    """The library is looked for by no connection of these tests (not restored to "not yet" after each one: a
    direction's thread that starts after its test ended would look again, load the library from, or build it
    into, the next test's state dir and set the loop that test's fixture had just cleared)."""
    saved, relay._native_looked = relay._native_looked, True
    yield
    relay._native_looked = saved


@pytest.fixture(autouse=True, params=["native", "python"])
def loop(request, monkeypatch):
    """Every relay test runs with relay.c's loop and with the Python one (the fallback without a compiler)."""
    monkeypatch.setattr(relay, "_native", None)
    if request.param == "native" and not relay.use_native():
        pytest.skip("no C compiler here: only the Python loop can run")
    return request.param


def _connected_pair() -> tuple[socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def test_both_directions_arrive_whole_and_half_close_is_passed_on():
    """The client sends a request and half-closes; the server answers only after seeing EOF,
    which only works if the relay passed the half-close on and kept the other direction open."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()
    request, response = os.urandom(3 << 20), os.urandom(9 << 20)

    def serve():
        received = _read_all(server)  # returns at the EOF the relay passed on
        server.sendall(hashlib.sha256(received).digest() + response)
        server.close()

    server_thread = threading.Thread(target=serve, daemon=True)
    server_thread.start()
    client.sendall(request)
    client.shutdown(socket.SHUT_WR)
    answer = _read_all(client)
    assert answer[:32] == hashlib.sha256(request).digest()
    assert answer[32:] == response
    relay_thread.join(10)
    assert not relay_thread.is_alive()
    client.close()


def test_a_socket_with_a_timeout_is_relayed():
    """Upstream sockets are dialled with a timeout (non-blocking underneath); the relay still moves everything."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    proxy_in.settimeout(5)
    proxy_out.settimeout(5)
    payload = os.urandom(5 << 20)
    threading.Thread(target=relay.copy, args=(proxy_out, proxy_in), daemon=True).start()
    threading.Thread(target=lambda: (server.sendall(payload), server.close()), daemon=True).start()
    assert _read_all(client) == payload
    client.close()


def test_a_conversation_is_relayed_both_ways():
    """Small messages going back and forth (each waits for the answer to the last) all arrive: neither
    direction waits on the other, and pump returns once both have ended."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()

    def echo():
        while data := server.recv(65536):
            server.sendall(data.upper())
        server.close()

    threading.Thread(target=echo, daemon=True).start()
    client.settimeout(10)
    for n in range(200):
        message = f"message {n};".encode()
        client.sendall(message)
        answer = b""
        while len(answer) < len(message):
            answer += client.recv(65536)
        assert answer == message.upper()
    client.shutdown(socket.SHUT_WR)
    assert client.recv(1) == b""  # the server saw EOF, closed, and that EOF came back
    relay_thread.join(10)
    assert not relay_thread.is_alive()
    client.close()


def test_a_reset_ends_the_relay():
    """The upstream resetting its connection ends both directions: the relay thread returns."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()
    client.sendall(b"hello")
    assert server.recv(5) == b"hello"
    server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # close = RST
    server.close()
    client.settimeout(10)
    try:
        assert client.recv(1) == b""
    except ConnectionResetError:
        pass
    client.close()
    relay_thread.join(10)
    assert not relay_thread.is_alive()


def test_a_half_close_from_the_server_is_passed_on():
    """The server answers and half-closes first; the client reads to that EOF and only then sends its
    part, which must still reach the server (the other direction stays open)."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()
    greeting, reply = os.urandom(2 << 20), os.urandom(1 << 20)
    server.sendall(greeting)
    server.shutdown(socket.SHUT_WR)
    assert _read_all(client) == greeting
    client.sendall(reply)
    client.shutdown(socket.SHUT_WR)
    assert _read_all(server) == reply
    relay_thread.join(10)
    assert not relay_thread.is_alive()
    client.close()
    server.close()


def test_large_transfers_both_ways_at_once_arrive_byte_exact():
    """Bulk data in both directions at the same time (each direction switches to its bulk buffer):
    both arrive whole and in order."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()
    up, down = os.urandom(24 << 20), os.urandom(40 << 20)
    received = {}

    def serve():
        sender = threading.Thread(target=lambda: (server.sendall(down), server.shutdown(socket.SHUT_WR)))
        sender.start()
        received["up"] = hashlib.sha256(_read_all(server)).digest()
        sender.join()
        server.close()

    server_thread = threading.Thread(target=serve, daemon=True)
    server_thread.start()
    sender = threading.Thread(target=lambda: (client.sendall(up), client.shutdown(socket.SHUT_WR)), daemon=True)
    sender.start()
    assert hashlib.sha256(_read_all(client)).digest() == hashlib.sha256(down).digest()
    sender.join(30)
    server_thread.join(30)
    assert received["up"] == hashlib.sha256(up).digest()
    relay_thread.join(10)
    assert not relay_thread.is_alive()
    client.close()


def test_a_slow_reader_gets_every_byte():
    """A client that reads a little at a time, with pauses, while the server sends as fast as it can:
    the relay blocks on the full socket instead of dropping or reordering anything."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()
    payload = os.urandom(12 << 20)
    threading.Thread(target=lambda: (server.sendall(payload), server.close()), daemon=True).start()
    chunks, reads = [], 0
    while chunk := client.recv(4096):
        chunks.append(chunk)
        reads += 1
        if reads % 256 == 0:
            threading.Event().wait(0.01)  # let the relay fill every buffer on the way
    assert b"".join(chunks) == payload
    client.close()
    relay_thread.join(10)
    assert not relay_thread.is_alive()



def test_what_the_relay_writes_to_is_sent_without_waiting_for_acks():
    """Both relayed sockets have Nagle's algorithm off once relaying starts: a message an endpoint writes
    in two pieces must not wait in the proxy for the peer's delayed ACK (tens of ms per exchange)."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    relay_thread = threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True)
    relay_thread.start()
    client.sendall(b"ping")
    assert server.recv(4, socket.MSG_WAITALL) == b"ping"
    server.sendall(b"pong")
    assert client.recv(4, socket.MSG_WAITALL) == b"pong"  # both directions are relaying now
    for sock in (proxy_in, proxy_out):
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    client.close()
    server.close()
    relay_thread.join(10)
    assert not relay_thread.is_alive()


def test_a_finished_thread_runs_the_next_job_and_a_forked_child_starts_its_own():
    """spawn() hands a job to a parked thread (the one that ran the last job), and in a forked child, where
    that thread does not exist, a spawned job still runs."""
    import time

    ran = []
    done = threading.Event()
    relay.spawn(lambda: (ran.append(threading.get_ident()), done.set()))
    assert done.wait(10)
    deadline = time.monotonic() + 10
    while not relay._parked and time.monotonic() < deadline:  # the thread parks right after its job
        time.sleep(0.01)
    done.clear()
    relay.spawn(lambda: (ran.append(threading.get_ident()), done.set()))
    assert done.wait(10)
    assert ran[0] == ran[1]

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports by its exit status
        child_done = threading.Event()
        relay.spawn(child_done.set)
        os._exit(0 if child_done.wait(5) else 1)
    assert os.waitpid(pid, 0)[1] == 0


def test_one_bulk_buffer_serves_transfer_after_transfer_byte_exact(loop):
    """Bulk buffers are reused: a download relayed after another (through the same reused buffer, with the
    first one's bytes still in it) arrives exactly, shorter than the first or not."""
    for size in (9 << 20, 5 << 20 | 12345):
        _relay_a_download(size)
        if loop == "python":
            assert len(relay._free_bulk) >= 1  # the buffer went back for the next connection


def _relay_a_download(size: int) -> None:
    """`size` random bytes from a server that then closes, relayed one way by relay.copy: the client gets them
    all, in order, then EOF, and the relay's thread returns."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    payload = os.urandom(size)
    relay_thread = threading.Thread(target=relay.copy, args=(proxy_out, proxy_in), daemon=True)
    relay_thread.start()
    threading.Thread(target=lambda: (server.sendall(payload), server.close()), daemon=True).start()
    try:
        assert _read_all(client) == payload
        relay_thread.join(10)
        assert not relay_thread.is_alive()
    finally:
        relay.close_all(client, proxy_in, proxy_out)


native_only = pytest.mark.parametrize("loop", ["native"], indirect=True)


class _CountedSocket(socket.socket):
    """A socket that counts the reads Python makes on it."""

    reads = 0

    def recv_into(self, *args):
        _CountedSocket.reads += 1
        return super().recv_into(*args)


def test_the_native_loop_moves_the_bytes_without_python(loop, monkeypatch):
    """With relay.c's loop in use, a relayed download never calls the socket's Python methods (no GIL per
    chunk); the Python loop does."""
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    counted = _CountedSocket(fileno=proxy_out.detach())
    monkeypatch.setattr(_CountedSocket, "reads", 0)
    payload = os.urandom(6 << 20)
    relay_thread = threading.Thread(target=relay.copy, args=(counted, proxy_in), daemon=True)
    relay_thread.start()
    threading.Thread(target=lambda: (server.sendall(payload), server.close()), daemon=True).start()
    assert _read_all(client) == payload  # EOF came: the relay half-closed its side
    relay_thread.join(10)
    assert relay.in_use() == loop
    assert (_CountedSocket.reads == 0) is (loop == "native")
    for s in (client, proxy_in, counted):
        s.close()


@native_only
def test_the_first_connection_loads_a_built_library(loop, monkeypatch):
    """A process that has not looked yet loads the library from the state dir at its first relayed
    connection, and relays that connection with it."""
    monkeypatch.setattr(relay, "_native", None)
    monkeypatch.setattr(relay, "_native_looked", False)
    built = nativerelay.library_path()
    assert built.is_file() and stat.S_IMODE(built.stat().st_mode) == 0o600
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    threading.Thread(target=relay.copy, args=(proxy_out, proxy_in), daemon=True).start()
    server.sendall(b"first")
    server.close()
    assert _read_all(client) == b"first"
    assert relay.in_use() == "native"
    for s in (client, proxy_in, proxy_out):
        s.close()


def _untrusted(path: Path, how: str, good: bytes) -> None:
    """Put a library at `path` that must not be loaded: a symlink to a good copy, a copy others can write,
    someone else's, a directory, a FIFO."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "symlink":
        target = path.with_name("elsewhere.so")
        target.write_bytes(good)
        target.chmod(0o600)
        path.symlink_to(target)
    elif how in ("world-writable", "group-writable"):
        path.write_bytes(good)
        path.chmod(0o606 if how == "world-writable" else 0o660)
    elif how == "another user's":
        path.write_bytes(good)
        path.chmod(0o600)
        os.chown(path, 65534, 65534)
    elif how == "directory":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path, 0o600)


@native_only
@pytest.mark.parametrize("how", ["symlink", "world-writable", "group-writable", "another user's", "directory", "fifo"])
def test_an_untrusted_library_in_the_state_dir_is_refused(loop, how, monkeypatch):
    """The state dir holds a library that is not this user's own regular file, or that others can write:
    it is not loaded, and connections are relayed by the Python loop (a FIFO is not waited on, and a build
    replaces it)."""
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    path = nativerelay.library_path()
    good = path.read_bytes()  # the fixture built it: the same bytes are loaded when trusted
    path.unlink()
    _untrusted(path, how, good)
    monkeypatch.setattr(relay, "_native", None)
    assert nativerelay.load(path) is None
    if how == "fifo":
        return
    assert relay.use_native() is False and relay.in_use() == "python"
    client, proxy_in = _connected_pair()
    proxy_out, server = _connected_pair()
    threading.Thread(target=relay.pump, args=(proxy_in, proxy_out), daemon=True).start()
    client.sendall(b"still relayed")
    client.shutdown(socket.SHUT_WR)
    assert _read_all(server) == b"still relayed"
    for s in (client, server):
        s.close()
    if how in ("symlink", "world-writable", "group-writable"):  # the control: the same bytes, trusted, load
        path.unlink()
        path.write_bytes(good)
        path.chmod(0o600)
        assert nativerelay.load(path) is not None


@native_only
def test_a_library_in_the_package_directory_is_never_loaded(loop, monkeypatch):
    """gtd's package directory can be a workspace an agent writes: a library planted beside the module
    (as a build, or in `_native` like the launcher's) is not loaded, even with none in the state dir and no
    compiler to build one."""
    good = nativerelay.library_path().read_bytes()
    nativerelay.library_path().unlink()
    name = nativerelay.library_path().name
    beside = Path(nativerelay.__file__).parent
    planted = [beside / name, beside / "_native" / name]
    made_dir = not planted[1].parent.exists()
    try:
        for p in planted:
            p.parent.mkdir(exist_ok=True)
            p.write_bytes(good)
            p.chmod(0o600)
        monkeypatch.setenv("CC", "/bin/false")
        monkeypatch.setattr(relay, "_native", None)
        assert relay.use_native() is False and relay.in_use() == "python"
        assert not nativerelay.library_path().exists()
        assert name not in Path("/proc/self/maps").read_text()
    finally:
        for p in planted:
            p.unlink(missing_ok=True)
        if made_dir:
            shutil.rmtree(planted[1].parent, ignore_errors=True)


def test_a_build_is_written_where_no_one_else_can_open_it(loop, tmp_path, monkeypatch):
    """The compiler creates its output with the umask's mode (group- or world-writable under umask 002 or
    000) before gtd's chmod: written in a directory only this user can enter, nobody can hold it open for
    writing and change the library after the checks that precede its load. Only the finished file is left."""
    record = tmp_path / "record"
    compiler = tmp_path / "cc"
    compiler.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
                        f'stat -c %a "$(dirname "$out")" > {record}\nhead -c 2048 /dev/zero > "$out"\n')
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    directory = tmp_path / "state" / "native"
    built = nativebuild.compile_into(nativerelay.SOURCE, "relay-test.so", directory, [], max_bytes=4096, mode=0o600)
    assert built == directory / "relay-test.so" and stat.S_IMODE(built.stat().st_mode) == 0o600
    assert record.read_text().strip() == "700"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and os.listdir(directory) == ["relay-test.so"]


@pytest.mark.parametrize("size", [100, 64 << 10, (64 << 10) + 1, (4 << 20) + 7])
def test_a_download_arrives_byte_exact_whether_it_fills_the_small_buffer_or_not(size):
    """A body that never fills the small buffer, one that fills it exactly and then ends (the switch to the
    bulk buffer meets EOF), one a byte longer, and one beyond a whole bulk buffer: each arrives whole, in
    order, with the EOF passed on."""
    _relay_a_download(size)
