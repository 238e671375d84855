"""The model API's trouble as the real sandbox's network layer sees it (apiwatch.py): a 5xx answer on the
proxy's plain-HTTP path and on the host-loopback forward, and a model host that cannot be reached, are
reported with the host; other destinations and healthy answers are not."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.providers.base import SandboxNeeds
from sandbox_support import requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]


@pytest.fixture
def failing_api():
    """A plain-HTTP model API on the host's loopback: 503 for /fail, 200 otherwise (keep-alive)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            status = 503 if self.path.startswith("/fail") else 200
            body = b"overloaded" if status == 503 else b"fine"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _resolver(host: str, port: int) -> list[str]:
    if host.endswith(".test"):
        return ["127.0.0.1"]
    raise OSError(f"no such host {host}")


def test_5xx_on_the_loopback_forward_is_reported_per_request(sandbox, repo, failing_api):
    trouble = []
    s = sandbox(Level.READONLY, needs=SandboxNeeds(model_hosts=[f"127.0.0.1:{failing_api}"]),
                on_api_trouble=trouble.append)
    url = f"http://127.0.0.1:{failing_api}"
    # One curl, one keep-alive connection, three requests: every answer is followed.
    r = sh(s, f"curl -sS --max-time 10 {url}/fail -o /dev/null {url}/ok -o /dev/null {url}/fail -o /dev/null "
              "-w '%{num_connects} '", repo)
    assert r.returncode == 0, r.err
    assert r.out.split() == ["1", "0", "0"]  # the same connection carried all three
    assert [(t.host, t.status) for t in trouble] == [(f"127.0.0.1:{failing_api}", 503)] * 2


def test_5xx_through_the_proxy_plain_http_path_is_reported(sandbox, repo, failing_api):
    trouble = []
    hosts = [f"api.test:{failing_api}", f"127.0.0.1:{failing_api}"]  # the name, and its loopback address explicitly
    s = sandbox(Level.READONLY, needs=SandboxNeeds(model_hosts=hosts), resolver=_resolver, on_api_trouble=trouble.append)
    r = sh(s, f"curl -sS --max-time 10 http://api.test:{failing_api}/fail; echo; "
              f"curl -sS --max-time 10 http://api.test:{failing_api}/ok", repo)
    assert r.out.split() == ["overloaded", "fine"], r.err
    assert [(t.host, t.status) for t in trouble] == [(f"api.test:{failing_api}", 503)]


def test_an_unreachable_model_host_is_reported_other_hosts_are_not(sandbox, repo):
    trouble = []
    down, other = _free_port(), _free_port()
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"allowDomains": [
        f"other.test:{other}", f"127.0.0.1:{other}"]}}}})
    needs = SandboxNeeds(model_hosts=[f"down.test:{down}", f"127.0.0.1:{down}"])
    s = sandbox(Level.READONLY, config=cfg, needs=needs, resolver=_resolver, on_api_trouble=trouble.append)
    r = sh(s, f"curl -sS --max-time 10 -p https://down.test:{down}/ ; curl -sS --max-time 10 http://127.0.0.1:{down}/ ;"
              f"curl -sS --max-time 10 -p https://other.test:{other}/", repo)
    assert "502" in r.err, r.err  # gtd's proxy: cannot reach, not refused
    assert [(t.host, t.status, t.reason) for t in trouble] == [
        (f"down.test:{down}", None, "connection refused"), (f"127.0.0.1:{down}", None, "connection refused")]
    assert s.violations == []
