"""The network boundary: only the filtering proxy leads out, and it follows the policy."""

from __future__ import annotations

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.providers.base import SandboxNeeds
from gtd.sandbox.session import NetworkRequest

from sandbox_support import py, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]

REGISTRY = "registry.test"


def _resolver(host: str, port: int) -> list[str]:
    """Test DNS: the fake registry name points at the loopback test server."""
    if host == REGISTRY:
        return ["127.0.0.1"]
    raise OSError(f"no such host {host}")


def _config(port: int, *, ip_literal: bool = True, level: str = "network") -> GtdConfig:
    allow = [f"{REGISTRY}:{port}"] + ([f"127.0.0.1:{port}"] if ip_literal else [])
    return GtdConfig.model_validate({"sandbox": {"levels": {level: {"allowDomains": allow}}}})


FETCH = "curl -fsS --max-time 10 {url}"


def test_package_download_from_allowed_domain_through_proxy(sandbox, repo, http_server):
    s = sandbox(Level.NETWORK, config=_config(http_server), resolver=_resolver)
    r = sh(s, FETCH.format(url=f"http://{REGISTRY}:{http_server}/pkg.tar.gz") + " -o pkg.tgz && head -c 17 pkg.tgz", repo)
    assert r.out == "PACKAGE-CONTENTS-", r.err
    assert s.violations == []


def test_download_via_https_connect_tunnel_and_socks5(sandbox, repo, http_server):
    # CONNECT carries any TCP stream; a plain-HTTP server behind it proves the tunnel is transparent.
    s = sandbox(Level.NETWORK, config=_config(http_server), resolver=_resolver)
    url = f"http://{REGISTRY}:{http_server}/x"
    r = sh(s, f"curl -sS --max-time 10 -p {url} | head -c 17; echo; curl -sS --max-time 10 -x \"$ALL_PROXY\" {url} | head -c 17", repo)
    assert r.out.split() == ["PACKAGE-CONTENTS-", "PACKAGE-CONTENTS-"], r.err


def test_python_urllib_uses_the_proxy_env(sandbox, repo, http_server):
    s = sandbox(Level.NETWORK, config=_config(http_server), resolver=_resolver)
    r = py(s, f"import urllib.request; print(urllib.request.urlopen('http://{REGISTRY}:{http_server}/p').read()[:17].decode())", repo)
    assert r.out.strip() == "PACKAGE-CONTENTS-", r.err


def test_network_domains_are_not_reachable_at_readwrite(sandbox, repo, http_server):
    s = sandbox(Level.READWRITE, config=_config(http_server), resolver=_resolver)
    r = sh(s, FETCH.format(url=f"http://{REGISTRY}:{http_server}/p"), repo)
    assert r.returncode != 0 and "PACKAGE" not in r.out
    assert [(v.kind, v.target, v.level) for v in s.violations] == [("network", f"{REGISTRY}:{http_server}", Level.READWRITE)]
    assert s.violations[0].time.endswith("+00:00")


def test_model_host_is_reachable_at_readonly(sandbox, repo, http_server):
    needs = SandboxNeeds(model_hosts=[f"127.0.0.1:{http_server}"])
    s = sandbox(Level.READONLY, needs=needs)
    r = sh(s, FETCH.format(url=f"http://127.0.0.1:{http_server}/v1/messages"), repo)
    assert r.out.startswith("PACKAGE"), r.err


def test_name_resolving_to_loopback_needs_the_explicit_ip_literal(sandbox, repo, http_server):
    s = sandbox(Level.NETWORK, config=_config(http_server, ip_literal=False), resolver=_resolver)
    r = sh(s, FETCH.format(url=f"http://{REGISTRY}:{http_server}/p"), repo)
    assert "PACKAGE" not in r.out
    assert "loopback" in s.violations[-1].detail


@pytest.mark.parametrize("target", ["127.0.0.1:{port}", "169.254.169.254:80", "[::1]:{port}", "10.0.0.1:80"])
def test_connect_to_raw_ip_loopback_or_metadata_is_refused(sandbox, repo, http_server, target):
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"network": {"allowDomains": ["*"]}}}})
    s = sandbox(Level.NETWORK, config=cfg)  # even "allow everything" does not open loopback/metadata
    target = target.format(port=http_server)
    host = target.rsplit(":", 1)[0]
    r = sh(s, f"curl -sS --max-time 5 -p http://{target}/ ; curl -sS --max-time 5 http://{target}/", repo)
    assert "PACKAGE" not in r.out
    if host != "10.0.0.1":  # a private address is allowed by "*" but unroutable here
        assert s.violations and all(v.kind == "network" for v in s.violations)


def test_explicitly_denied_domain_wins_and_decider_is_not_asked(sandbox, repo, http_server):
    asked = []
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {
        "network": {"allowDomains": [f"*.test:{http_server}", f"127.0.0.1:{http_server}"]},
        "readonly": {"denyDomains": [REGISTRY]},
    }}})
    s = sandbox(Level.NETWORK, config=cfg, resolver=_resolver, network_decider=lambda req: asked.append(req) or True)
    r = sh(s, FETCH.format(url=f"http://{REGISTRY}:{http_server}/p"), repo)
    assert "PACKAGE" not in r.out and asked == []
    assert s.violations[0].detail == "denied by rule"


def test_network_decider_is_asked_and_honoured_once_per_session(sandbox, repo, http_server):
    asked: list[NetworkRequest] = []
    seen_violations = []
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"allowDomains": [f"127.0.0.1:{http_server}"]}}}})
    s = sandbox(Level.READWRITE, config=cfg, resolver=_resolver, on_violation=seen_violations.append,
                network_decider=lambda req: asked.append(req) or req.host == REGISTRY)
    url = f"http://{REGISTRY}:{http_server}/p"
    r = sh(s, f"curl -sS --max-time 10 {url} | head -c 7; echo; curl -sS --max-time 10 {url} | head -c 7", repo)
    assert r.out.split() == ["PACKAGE", "PACKAGE"], r.err
    assert [(a.host, a.port, a.level) for a in asked] == [(REGISTRY, http_server, Level.READWRITE)]
    r = sh(s, "curl -sS --max-time 5 http://other.test:1/", repo)
    assert [a.host for a in asked] == [REGISTRY, "other.test"]
    assert [v.target for v in seen_violations] == ["other.test:1"] and seen_violations[0].detail == "not approved"


def test_direct_connections_ignoring_the_proxy_fail(sandbox, repo, http_server):
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"network": {"allowDomains": ["*"]}}}})
    s = sandbox(Level.NETWORK, config=cfg)
    code = (
        "import socket\n"
        f"for addr in (('127.0.0.1', {http_server}), ('1.1.1.1', 80), ('8.8.8.8', 53)):\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=3); print('CONNECTED')\n"
        "    except OSError as e: print('failed')\n"
    )
    r = py(s, code, repo)
    assert r.out.split() == ["failed"] * 3, r.out
    r = sh(s, f"curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{http_server}/", repo)
    assert "PACKAGE" not in r.out


def test_no_dns_inside_the_sandbox(sandbox, repo):
    s = sandbox(Level.NETWORK)
    r = py(s, "import socket\ntry:\n    print(socket.getaddrinfo('example.com', 443))\nexcept OSError as e: print('no-dns')", repo)
    assert r.out.strip() == "no-dns"


def test_proxy_token_is_required(sandbox, repo, http_server):
    s = sandbox(Level.NETWORK, config=_config(http_server), resolver=_resolver)
    url = f"http://{REGISTRY}:{http_server}/p"
    r = sh(s, f"curl -sS --max-time 5 -o /dev/null -w '%{{http_code}} ' -x http://127.0.0.1:3128 {url};"
              f" curl -sS --max-time 5 -o /dev/null -w '%{{http_code}} ' -x http://gtd:wrong@127.0.0.1:3128 {url};"
              f" curl -sS --max-time 5 -x socks5h://gtd:wrong@127.0.0.1:3128 {url} || echo socks-refused", repo)
    assert r.out.split()[:2] == ["407", "407"], r.out + r.err
    assert "socks-refused" in r.out and "PACKAGE" not in r.out


def test_an_allowed_but_unreachable_upstream_is_cannot_reach_502_not_a_refusal(sandbox, repo):
    """A model API or registry that is down is not the sandbox's doing: 502 "cannot reach", no violation,
    and nothing a person could approve."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    s = sandbox(Level.NETWORK, config=_config(closed), resolver=_resolver)
    r = sh(s, f"curl -sS --max-time 10 -w ' HTTP=%{{http_code}}' http://{REGISTRY}:{closed}/p;"
              f" curl -sS --max-time 10 -p http://{REGISTRY}:{closed}/p", repo)
    assert "HTTP=502" in r.out and f"gtd sandbox: cannot reach {REGISTRY}:{closed}" in r.out, (r.out, r.err)
    assert "CONNECT tunnel failed, response 502" in r.err, r.err
    assert f"{REGISTRY}:{closed} refused" not in r.out and s.violations == []
