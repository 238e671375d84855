"""Fixtures for reading what gtd puts on a real terminal (a pseudo-terminal driven by pexpect)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from support import Screen


@pytest.fixture
def terminal(isolated_home):
    """terminal(*args, cwd=..., env=...) -> support.Screen running the real `gtd` on a pty."""
    screens: list[Screen] = []

    def spawn(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> Screen:
        screens.append(Screen(*args, cwd=cwd, env=env, timeout=timeout))
        return screens[-1]

    yield spawn
    for screen in screens:
        screen.stop()


class _Registry(http.server.BaseHTTPRequestHandler):
    """A stand-in package registry on loopback: every GET answers REGISTRY-OK."""

    def do_GET(self):  # noqa: N802
        body = b"REGISTRY-OK"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def registry_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()

