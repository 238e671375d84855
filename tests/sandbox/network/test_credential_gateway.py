"""The credential gateway on its own (gtd/sandbox/network/credential_gateway.py), served on a host socket
against a local upstream that records what it gets: the real key only in the auth header and only to the
route's upstream, another route's placeholder refused, an upstream's echo of the key scrubbed, and a
streamed answer passed on event by event."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gtd.sandbox.network.credential_gateway import CredentialGateway, GatewayRoute, make_placeholder

REAL_A = "sk-ant-real-aaaaaaaaaaaaaaaaaaaa"
REAL_O = "sk-openai-real-oooooooooooooooo"


class Upstream:
    def __init__(self):
        self.got: list[dict] = []
        self.release = threading.Event()  # the streamed answer's second event waits for this
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.got.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                  "body": body.decode()})
                if self.path.endswith("/echo-error"):
                    payload = json.dumps({"error": f"invalid x-api-key {self.headers.get('x-api-key')} or "
                                                   f"{self.headers.get('authorization')}"}).encode()
                    self.send_response(401)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, event in enumerate((b"event: one\ndata: 1\n\n", b"event: two\ndata: 2\n\n")):
                    if i == 1:
                        outer.release.wait(10)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def upstream():
    u = Upstream()
    yield u
    u.release.set()
    u.server.shutdown()
    u.server.server_close()


@pytest.fixture
def gateway(upstream):
    misuse: list[tuple[str, str]] = []
    gw = CredentialGateway([GatewayRoute("anthropic", upstream.url + "/base", ("ANTHROPIC_API_KEY",)),
                            GatewayRoute("openai", upstream.url + "/v1", ("OPENAI_API_KEY",))],
                           environ={"ANTHROPIC_API_KEY": REAL_A, "OPENAI_API_KEY": REAL_O},
                           on_misuse=lambda route, why: misuse.append((route, why)))
    listener = socket.create_server(("127.0.0.1", 0))
    gw.serve(listener)
    gw.port = listener.getsockname()[1]
    gw.misused = misuse
    yield gw
    gw.stop_serving(listener)
    listener.close()


def send(gw, path: str, headers: dict, body: bytes = b"{}") -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
    head = f"POST {path} HTTP/1.1\r\nHost: evil.example\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    conn.sendall(head.encode() + b"\r\n" + body)
    return conn


def read_all(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    return data


def test_the_real_key_goes_only_into_the_auth_header_of_the_routes_upstream(gateway, upstream):
    upstream.release.set()  # its answers stream without a pause
    a = gateway.env_placeholders["ANTHROPIC_API_KEY"]
    assert a.startswith("gtd-placeholder-") and REAL_A not in a
    body = json.dumps({"messages": [{"role": "user", "content": f"my key is {a}"}]}).encode()
    answer = read_all(send(gateway, "/anthropic/v1/messages?beta=true", {"x-api-key": a, "X-Note": a}, body))
    assert answer.startswith(b"HTTP/1.1 200")
    got = upstream.got[0]
    assert got["path"] == "/base/v1/messages?beta=true"  # the route's upstream, whatever Host said
    assert got["headers"]["host"] == upstream.url.removeprefix("http://")
    assert got["headers"]["x-api-key"] == REAL_A
    assert got["headers"]["x-note"] == a and a in got["body"] and REAL_A not in got["body"]  # only the auth header
    read_all(send(gateway, "/openai/chat/completions", {"Authorization": f"Bearer {gateway.env_placeholders['OPENAI_API_KEY']}"}))
    assert upstream.got[1]["path"] == "/v1/chat/completions"
    assert upstream.got[1]["headers"]["authorization"] == f"Bearer {REAL_O}"


def test_another_routes_placeholder_is_refused_as_misuse(gateway, upstream):
    answer = read_all(send(gateway, "/openai/chat/completions", {"x-api-key": gateway.env_placeholders["ANTHROPIC_API_KEY"]}))
    assert answer.startswith(b"HTTP/1.1 403") and b"ANTHROPIC_API_KEY" in answer
    assert upstream.got == []  # nothing went upstream
    assert gateway.misused and gateway.misused[0][0] == "openai"
    assert REAL_A.encode() not in answer


def test_an_unknown_route_is_refused(gateway, upstream):
    answer = read_all(send(gateway, "/elsewhere/v1/messages", {"x-api-key": gateway.env_placeholders["ANTHROPIC_API_KEY"]}))
    assert answer.startswith(b"HTTP/1.1 404") and b"anthropic, openai" in answer and upstream.got == []


def test_an_upstream_error_that_echoes_the_key_is_scrubbed(gateway):
    answer = read_all(send(gateway, "/anthropic/echo-error", {"x-api-key": gateway.env_placeholders["ANTHROPIC_API_KEY"]}))
    assert answer.startswith(b"HTTP/1.1 401") and b"invalid x-api-key" in answer
    assert REAL_A.encode() not in answer and b"removed by gtd" in answer


def test_a_streamed_answer_passes_event_by_event(gateway, upstream):
    """The second event is sent only once the first has reached the client through the gateway."""
    conn = send(gateway, "/anthropic/v1/messages", {"x-api-key": gateway.env_placeholders["ANTHROPIC_API_KEY"]})
    data = b""
    deadline = time.monotonic() + 10
    while b"data: 1" not in data and time.monotonic() < deadline:
        data += conn.recv(65536)
    assert b"data: 1" in data and b"data: 2" not in data  # the first event, while the upstream holds the second
    upstream.release.set()
    data += read_all(conn)
    assert b"data: 2" in data


def test_find_placeholder_names_what_it_stands_for(gateway):
    a = gateway.env_placeholders["ANTHROPIC_API_KEY"]
    assert gateway.find_placeholder(f"GET /?k={a} HTTP/1.1".encode()) == "ANTHROPIC_API_KEY"
    assert gateway.find_placeholder(b"GET / HTTP/1.1\r\nx-api-key: gtd-placeholder-0000\r\n") is None
    assert gateway.find_placeholder(REAL_A.encode()) is None


def test_a_placeholder_never_equals_or_holds_the_key():
    for real in ("", "gtd-placeholder-", "x" * 56):
        value = make_placeholder(real)
        assert value != real and (not real or real not in value[len("gtd-placeholder-"):])
    assert make_placeholder() != make_placeholder()


class FakeLogin:
    name = "a subscription login"

    def __init__(self):
        self.last = None

    def token(self):
        self.last = "sk-ant-oat01-real-login-token-zzzz"
        return self.last


def test_a_login_token_goes_in_as_bearer_and_is_scrubbed_from_errors(upstream):
    login = FakeLogin()
    gw = CredentialGateway([GatewayRoute("anthropic", upstream.url, (), login=login)], environ={})
    listener = socket.create_server(("127.0.0.1", 0))
    gw.serve(listener)
    gw.port = listener.getsockname()[1]
    try:
        placeholder = gw.login_placeholders["anthropic"]
        answer = read_all(send(gw, "/anthropic/echo-error", {"Authorization": f"Bearer {placeholder}"}))
    finally:
        gw.stop_serving(listener)
        listener.close()
    assert upstream.got[0]["headers"]["authorization"] == "Bearer sk-ant-oat01-real-login-token-zzzz"
    assert answer.startswith(b"HTTP/1.1 401") and b"real-login-token" not in answer and b"removed by gtd" in answer
    assert gw.find_placeholder(placeholder) == "a subscription login"


def test_connections_held_open_are_capped(gateway, upstream):
    """Each connection holds a host thread for up to a minute: past the cap the gateway closes new ones at once,
    and serves again as soon as one is done."""
    from gtd.sandbox.network import credential_gateway

    upstream.release.set()
    held = [socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
            for _ in range(credential_gateway.MAX_CONNECTIONS)]
    try:
        time.sleep(0.3)  # every held one is being served (reading its head)
        extra = socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
        assert extra.recv(100) == b""  # closed without an answer
        extra.close()
        held.pop().close()
        time.sleep(0.3)
        answer = read_all(send(gateway, "/anthropic/v1/messages", {"x-api-key": gateway.env_placeholders["ANTHROPIC_API_KEY"]}))
        assert answer.startswith(b"HTTP/1.1 200")
    finally:
        for conn in held:
            conn.close()
