"""The proxy's byte relay (sandbox/relay.py): every byte arrives in order, both ways, whatever size the
buffer has grown to, a half-close is passed on either way, and a slow reader loses nothing."""

from __future__ import annotations

import hashlib
import os
import socket
import threading

from gtd.sandbox import relay


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


def test_one_bulk_buffer_serves_transfer_after_transfer_byte_exact():
    """Bulk buffers are reused: a download relayed after another (through the same reused buffer, with the
    first one's bytes still in it) arrives exactly, shorter than the first or not."""
    for size in (9 << 20, 5 << 20 | 12345):
        client, proxy_in = _connected_pair()
        proxy_out, server = _connected_pair()
        payload = os.urandom(size)
        relay_thread = threading.Thread(target=relay.copy, args=(proxy_out, proxy_in), daemon=True)
        relay_thread.start()
        threading.Thread(target=lambda: (server.sendall(payload), server.close()), daemon=True).start()
        assert _read_all(client) == payload
        relay_thread.join(10)
        assert len(relay._free_bulk) >= 1  # the buffer went back for the next connection
        client.close()
        proxy_in.close()
        proxy_out.close()
