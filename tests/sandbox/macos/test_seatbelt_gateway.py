"""The seatbelt backend's model credential gateway, with macOS simulated (sys.platform "darwin") and a fake
`sandbox-exec` (tests/fake_macos.py) that records the profile and runs the command unsandboxed: the session
picks the seatbelt backend, serves the gateway on the host's loopback at a port of its own, names that port in
the CLI's base URL and in the profile, and puts the real key in only for this session's placeholder. That
seatbelt enforces the profile (the port reachable, everything else refused) can only be checked on a Mac."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fake_macos import fake_sandbox_exec
from gtd.config.schema import Level
from gtd.sandbox.macos.seatbelt import macos_path
from gtd.providers.base import SandboxNeeds

REAL = "sk-ant-api-" + os.urandom(12).hex()
POST = ("import os, sys, urllib.request as u; "
        "r = u.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=b'{}', "
        "headers={'x-api-key': os.environ['ANTHROPIC_API_KEY']}); "
        "print(u.build_opener(u.ProxyHandler({})).open(r, timeout=10).read().decode())")


@pytest.fixture
def upstream():
    """The model API stand-in: records the x-api-key of each request."""
    keys: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            keys.append(self.headers.get("x-api-key"))
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.keys = keys
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def on_macos(tmp_path, monkeypatch):
    """sys.platform "darwin" and the fake sandbox-exec first on PATH; yields the file its last profile lands in."""
    bin_dir = tmp_path / "macos-bin"
    fake_sandbox_exec(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "platform", "darwin")
    return bin_dir / "profile.sb"


def test_under_seatbelt_the_gateway_serves_the_host_loopback_at_its_own_port(sandbox, repo, upstream, on_macos,
                                                                              monkeypatch):
    from gtd.providers.model_routes import anthropic_route

    monkeypatch.setenv("ANTHROPIC_API_KEY", REAL)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.url)
    session = sandbox(Level.READWRITE, needs=SandboxNeeds(model_routes=[anthropic_route()],
                                                          env_passthrough=["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]))
    assert session.backend.name == "seatbelt" and session.credentials is not None
    port = session.backend.gateway_port
    assert port and port not in (3129, session.proxy_port)
    assert session.gateway_urls() == {"anthropic": f"http://127.0.0.1:{port}/anthropic"}

    result = session.run(["env"], cwd=repo, timeout=30)
    env = dict(line.split("=", 1) for line in result.stdout.decode().splitlines() if "=" in line)
    assert env["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}/anthropic"
    placeholder = env["ANTHROPIC_API_KEY"]
    assert placeholder.startswith("gtd-placeholder-") and REAL not in result.stdout.decode()
    profile = on_macos.read_text()
    assert f'(allow network-outbound (remote ip "localhost:{port}"))' in profile
    assert f'(allow network-outbound (remote ip "localhost:{session.proxy_port}"))' in profile

    # The command (unsandboxed here: the fake sandbox-exec) reaches the model through the gateway; the model
    # gets the real key in place of the placeholder.
    answer = session.run([sys.executable, "-c", POST], cwd=repo, timeout=30)
    assert answer.returncode == 0 and answer.stdout.decode().strip() == "ok", answer.stderr.decode()
    assert upstream.keys == [REAL]

    # Any local process can reach the port: without this session's placeholder, no key is put in.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"POST /anthropic/v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: guessed\r\n"
                     b"content-length: 2\r\nconnection: close\r\n\r\n{}")
        while conn.recv(65536):
            pass
    assert upstream.keys == [REAL, "guessed"]

    session.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # nothing listens once the session closed


def test_under_seatbelt_claudes_placeholder_login_is_written_where_claude_looks(sandbox, repo, upstream, on_macos,
                                                                                 tmp_path, monkeypatch):
    """No mount to lay the placeholder login over: it is written in claude's config dir, placeholders only,
    and the real token (here from the fake Keychain) is put in by the gateway."""
    from fake_macos import FakeSecurity
    from gtd.providers import claude_keychain
    from gtd.providers.claude import ClaudeProvider

    token = "sk-ant-oat01-" + os.urandom(12).hex()
    fake = FakeSecurity(tmp_path / "security-bin", {"claudeAiOauth": {
        "accessToken": token, "refreshToken": "sk-ant-ort01-x", "expiresAt": 9999999999999, "subscriptionType": "max"}})
    monkeypatch.setattr(claude_keychain, "SECURITY", str(fake.path))
    monkeypatch.setenv("USER", "dev")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.url)
    provider = ClaudeProvider()
    session = sandbox(Level.READWRITE, needs=provider.sandbox_needs(repo))
    login = provider.config_dir / ".credentials.json"
    written = json.loads(login.read_text())["claudeAiOauth"]
    placeholder = written["accessToken"]
    assert placeholder.startswith("gtd-placeholder-") and written["refreshToken"] == placeholder
    assert token not in login.read_text() and written["subscriptionType"] == "max"
    profile_run = session.run(["true"], cwd=repo, timeout=30)
    assert profile_run.returncode == 0
    profile = on_macos.read_text()  # the placeholder file is a protected path: never writable inside
    assert f'(subpath "{macos_path(login)}")' in profile.split(";; protected paths stay read-only", 1)[1]
    env = session.environment()
    request = (f"POST /anthropic/v1/messages HTTP/1.1\r\nHost: x\r\nauthorization: Bearer {placeholder}\r\n"
               f"x-api-key: {placeholder}\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}").encode()
    port = int(env["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        while conn.recv(65536):
            pass
    assert upstream.keys == [token]
