"""The network boundary: only the filtering proxy leads out, and it follows the policy."""

from __future__ import annotations

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.providers.base import SandboxNeeds
from gtd.sandbox.session import NetworkRequest

from sandbox_support import PY, py, requires_bwrap, sh

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
    r = sh(s, f"curl -sS --max-time 10 -p {url} | head -c 17; echo; curl -sS --max-time 10 -x \"$(echo $HTTP_PROXY | sed s/^http:/socks5h:/)\" {url} | head -c 17", repo)
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
    # --noproxy '': through the proxy even for loopback (which NO_PROXY otherwise keeps inside the sandbox).
    r = sh(s, f"curl -sS --max-time 5 --noproxy '' -p http://{target}/ ; curl -sS --max-time 5 --noproxy '' http://{target}/", repo)
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


def _intercepting(port: int, *allow: str) -> GtdConfig:
    """A config that catches direct connections on the test server's (random, high) port too."""
    return GtdConfig.model_validate({"sandbox": {"interceptPorts": [port], "levels": {"network": {
        "allowDomains": [f"{REGISTRY}:{port}", f"127.0.0.1:{port}", *allow]}}}})


RAW_GET = (
    "import socket, sys\n"
    "for host in sys.argv[2:]:\n"
    "    try:\n"
    "        s = socket.create_connection((host, int(sys.argv[1])), timeout=10)\n"
    "        s.sendall(b'GET /p HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n')\n"
    "        data = b''\n"
    "        while chunk := s.recv(65536): data += chunk\n"
    "        print(host, 'PACKAGE' if b'PACKAGE-CONTENTS' in data else data.split(b'\\r\\n\\r\\n')[-1].decode().strip())\n"
    "    except OSError as e: print(host, 'failed', e)\n"
)


def test_direct_connections_ignoring_the_proxy_are_decided_by_the_same_rules(sandbox, repo, http_server):
    s = sandbox(Level.NETWORK, config=_intercepting(http_server), resolver=_resolver)
    r = s.run([PY, "-c", RAW_GET, str(http_server), REGISTRY, "other.test", "10.0.0.1", "127.0.0.1"], cwd=repo, timeout=60)
    out = r.stdout.decode()
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines[REGISTRY] == "PACKAGE", out + r.stderr.decode()
    assert lines["other.test"] == f"gtd sandbox: other.test:{http_server} refused: not in the allow list", out
    assert "PACKAGE" not in lines["10.0.0.1"] and "PACKAGE" not in lines["127.0.0.1"]  # private; the sandbox's own loopback
    assert [(v.target, v.detail) for v in s.violations] == [
        (f"other.test:{http_server}", "not in the allow list"),
        (f"10.0.0.1:{http_server}", "not in the allow list"),
    ]
    r = sh(s, f"curl -sS --max-time 10 --noproxy '*' http://{REGISTRY}:{http_server}/p | head -c 7", repo)
    assert r.out == "PACKAGE", r.err


def test_dns_gives_stand_in_addresses_and_never_resolves_upstream(sandbox, repo):
    looked_up = []
    s = sandbox(Level.NETWORK, resolver=lambda host, port: looked_up.append(host) or ["127.0.0.1"])
    code = (
        "import socket\n"
        "a = socket.gethostbyname('example.com'); b = socket.gethostbyname('EXAMPLE.com.'); c = socket.gethostbyname('x.test')\n"
        "print(a, a == b, a != c)\n"
        "try: socket.getaddrinfo('example.com', 443, socket.AF_INET6); print('aaaa')\n"
        "except OSError: print('no-aaaa')\n"
        "try: socket.gethostbyname('bad!name.test'); print('bad')\n"
        "except OSError: print('no-bad')\n"
    )
    r = py(s, code, repo)
    first, same, differs = r.out.split()[:3]
    assert first.startswith("198.18.") and same == "True" and differs == "True", r.out + r.err
    assert "no-aaaa" in r.out and "no-bad" in r.out
    assert looked_up == []  # a lookup alone carries nothing out of the sandbox


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


LOOPBACK_CLIENTS = r"""
python3 -m http.server --bind 127.0.0.1 18931 >/dev/null 2>&1 &
python3 -c "
import socket, time
for _ in range(200):
    try: socket.create_connection(('127.0.0.1', 18931), timeout=1).close(); break
    except OSError: time.sleep(0.05)
"
echo curl $(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:18931/)
echo curl-localhost $(curl -s -o /dev/null -w '%{http_code}' http://localhost:18931/)
echo wget $(wget -q -O /dev/null http://127.0.0.1:18931/ && echo 200)
echo urllib $(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:18931/').status)")
echo node-fetch $(node -e "fetch('http://127.0.0.1:18931/').then(r => console.log(r.status))")
echo node-http $(node -e "require('http').get('http://localhost:18931/', r => console.log(r.statusCode))")
kill %1
"""


def test_loopback_is_the_sandboxs_own_and_every_client_connects_directly(sandbox, repo):
    asked = []
    s = sandbox(Level.READWRITE, network_decider=lambda req: asked.append(req) or False)
    r = sh(s, LOOPBACK_CLIENTS, repo, timeout=60)
    results = dict(line.split(" ", 1) for line in r.out.splitlines() if " " in line)
    expected = {"curl": "200", "curl-localhost": "200", "wget": "200", "urllib": "200", "node-fetch": "200", "node-http": "200"}
    assert {k: results.get(k) for k in expected} == expected, r.out + r.err
    assert asked == [] and s.violations == []  # no proxy, no approval


def test_host_loopback_is_reached_only_through_its_explicit_rule(sandbox, repo, http_server):
    asked = []
    fetch = f"curl -sS --max-time 5 http://127.0.0.1:{http_server}/ | head -c 7"
    s = sandbox(Level.NETWORK, network_decider=lambda req: asked.append(req) or True)
    assert "PACKAGE" not in sh(s, fetch, repo).out  # the sandbox's own loopback: nothing listens there
    # Through the proxy, approving is not even offered: an approval never opens the host's loopback.
    r = sh(s, f"curl -sS --max-time 5 --noproxy '' http://127.0.0.1:{http_server}/", repo)
    assert "PACKAGE" not in r.out and asked == []
    assert "hostLoopbackPorts" in r.out and "hostLoopbackPorts" in s.violations[-1].detail
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"hostLoopbackPorts": [http_server]}}}})
    s = sandbox(Level.NETWORK, config=cfg)
    assert s.policy.to_dict()["hostLoopbackPorts"] == [http_server]
    r = sh(s, fetch + f"; echo; node -e \"fetch('http://localhost:{http_server}/').then(r => r.text()).then(t => console.log(t.slice(0, 7)))\"", repo)
    assert r.out.split() == ["PACKAGE", "PACKAGE"], r.err
    assert s.violations == []
    s = sandbox(Level.READONLY, config=cfg)  # a level's rules hold for the levels above it, not below
    assert "PACKAGE" not in sh(s, fetch, repo).out


def test_allow_once_reaches_a_name_whose_address_is_private_but_star_does_not():
    """The person saw the name they allowed; `*` alone must not open the LAN (DNS rebinding)."""
    from gtd.sandbox.policy.domains import DomainRules
    from gtd.sandbox.network.proxy import FilteringProxy

    dialled = []
    resolver = lambda host, port: dialled.append(host) or ["192.0.2.10"]  # noqa: E731 - not globally routable
    approved = FilteringProxy(DomainRules.parse([], []), "t", ask=lambda h, p: True, resolver=resolver, connect_timeout=0.2)
    verdict = approved.authorize("intranet.test", 8080)
    assert not verdict.denied and verdict.reason.startswith("cannot connect to 192.0.2.10:8080"), verdict
    star = FilteringProxy(DomainRules.parse(["*"], []), "t", resolver=resolver, connect_timeout=0.2)
    verdict = star.authorize("intranet.test", 8080)
    assert verdict.denied and verdict.reason == "resolves to 192.0.2.10 (private network address)"
    asked = []
    loop = FilteringProxy(DomainRules.parse([], []), "t", ask=lambda h, p: asked.append(h) or True, resolver=resolver)
    verdict = loop.authorize("127.0.0.1", 5432)  # a loopback literal is never offered for approval
    assert verdict.denied and asked == [] and "hostLoopbackPorts" in verdict.reason
