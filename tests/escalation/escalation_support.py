"""Helpers for the escalation tests (importable: pytest puts this directory on sys.path)."""

from __future__ import annotations

import http.server

import pexpect


def finish(child: pexpect.spawn) -> tuple[str, int]:
    """Wait for the child to exit: (everything it printed since the last expect, exit status)."""
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    return output, child.exitstatus


class RegistryHandler(http.server.BaseHTTPRequestHandler):
    """A stand-in package registry: every GET answers REGISTRY-OK."""

    def do_GET(self):  # noqa: N802
        body = b"REGISTRY-OK"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass
