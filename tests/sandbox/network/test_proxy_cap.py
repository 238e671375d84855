"""The filtering proxy serves a bounded number of connections at once: each holds host threads (two for a
tunnel), and an agent opening thousands would exhaust the person's thread limit. Past the cap new ones are
closed at once; the proxy serves again as soon as one ends."""

from __future__ import annotations

import socket
import time

from gtd.sandbox.network import proxy as proxy_module
from gtd.sandbox.network.proxy import FilteringProxy
from gtd.sandbox.policy.domains import DomainRules


def test_connections_past_the_cap_are_closed_and_served_again_once_one_ends(monkeypatch):
    monkeypatch.setattr(proxy_module, "MAX_CONNECTIONS", 4)
    proxy = FilteringProxy(DomainRules.parse([], []), "tok", connect_timeout=0.5)
    listener = socket.create_server(("127.0.0.1", 0))
    proxy.serve(listener)
    port = listener.getsockname()[1]
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(4)]
    try:
        time.sleep(0.3)  # each held one is being served (waiting for its first byte)
        extra = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert extra.recv(100) == b""  # closed without a word
        extra.close()
        held.pop().close()
        time.sleep(0.3)
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        conn.sendall(b"CONNECT blocked.test:443 HTTP/1.1\r\nHost: blocked.test:443\r\n\r\n")
        answer = conn.recv(100)
        assert answer.startswith(b"HTTP/1.1 4"), answer  # answered (refused: no proxy credentials), not closed
        conn.close()
    finally:
        for c in held:
            c.close()
        proxy.stop_serving(listener)
        listener.close()
