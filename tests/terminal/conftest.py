"""Fixtures for reading what gtd puts on a real terminal (a pseudo-terminal driven by pexpect)."""

from __future__ import annotations

import http.server
import io
import os
import sys
import threading
from pathlib import Path

import pexpect
import pytest


class Screen:
    """A gtd process on a pty, and every byte it wrote to the terminal (`text`)."""

    def __init__(self, child: pexpect.spawn, log: io.StringIO):
        self.child = child
        self._log = log

    @property
    def text(self) -> str:
        return self._log.getvalue()

    def finish(self, timeout: float = 120) -> int:
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)


@pytest.fixture
def terminal(isolated_home):
    """terminal(*args, cwd=..., env=...) -> Screen running the real `gtd` on a pty (colours on, like a person's)."""
    screens: list[Screen] = []

    def spawn(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> Screen:
        full_env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50", **(env or {})}
        full_env.pop("NO_COLOR", None)
        log = io.StringIO()
        child = pexpect.spawn(sys.executable, ["-m", "gtd", *args], cwd=str(cwd), env=full_env, encoding="utf-8",
                              codec_errors="replace", timeout=timeout, dimensions=(50, 160))
        child.logfile_read = log
        screen = Screen(child, log)
        screens.append(screen)
        return screen

    yield spawn
    for screen in screens:
        if screen.child.isalive():
            screen.child.terminate(force=True)


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

