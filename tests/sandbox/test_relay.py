"""The proxy's byte relay (sandbox/relay.py): every byte arrives in order, both ways, and a
half-close is passed on, whether the kernel splices or the userspace copy runs."""

from __future__ import annotations

import hashlib
import os
import socket
import threading

import pytest

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


@pytest.fixture(params=["splice", "userspace"])
def mode(request, monkeypatch):
    if request.param == "userspace":
        monkeypatch.setattr(relay, "_SPLICE", None)
    elif relay._SPLICE is None:
        pytest.skip("no splice(2) on this platform")
    return request.param


def test_both_directions_arrive_whole_and_half_close_is_passed_on(mode):
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


def test_a_socket_with_a_timeout_is_relayed(mode):
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


def test_a_conversation_is_relayed_both_ways(mode):
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


def test_a_reset_ends_the_relay(mode):
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
