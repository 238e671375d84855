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
