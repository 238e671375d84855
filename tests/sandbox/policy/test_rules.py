"""Pure units: domain rule matching, address checks, proxy decisions, denied-write parsing, policy building."""

from __future__ import annotations

import pytest

from gtd.config.schema import GtdConfig, Level, Phase
from gtd.providers.base import SandboxNeeds
from gtd.sandbox.network.addresses import forbidden_reason
from gtd.sandbox.policy.domains import DomainRules, parse_rule
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.network.proxy import FilteringProxy
from gtd.sandbox.diagnose.violations import denied_write_paths

from sandbox_support import git


@pytest.mark.parametrize("rule,host,port,expected", [
    ("pypi.org", "pypi.org", 443, True),
    ("pypi.org", "PyPI.org.", 80, True),
    ("pypi.org", "evil-pypi.org", 443, False),
    ("pypi.org:443", "pypi.org", 80, False),
    ("*.github.com", "api.github.com", 443, True),
    ("*.github.com", "github.com", 443, False),
    ("*.github.com", "api.github.com.evil.io", 443, False),
    ("*.github.com:443", "a.b.github.com", 443, True),
    ("*", "anything.example", 1234, True),
    ("*:443", "anything.example", 80, False),
    ("127.0.0.1:8080", "127.0.0.1", 8080, True),
    ("[::1]:8080", "::1", 8080, True),
    ("[::1]:8080", "[::1]", 8080, True),
])
def test_rule_matching(rule, host, port, expected):
    assert parse_rule(rule).matches(host, port) is expected


@pytest.mark.parametrize("bad", ["", "foo*.com", "*.", "host:99999", "host:x", "[::1"])
def test_malformed_rules_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_rule(bad)


def test_deny_wins_over_allow_and_unknown_otherwise():
    rules = DomainRules.parse(["*.example.com", "example.org"], ["secret.example.com"])
    assert rules.decide("a.example.com", 443) == "allow"
    assert rules.decide("secret.example.com", 443) == "deny"
    assert rules.decide("example.net", 443) == "unknown"


def test_only_explicit_ip_literals_open_loopback():
    rules = DomainRules.parse(["*", "127.0.0.1:9000"], [])
    assert rules.explicitly_allows_address("127.0.0.1", 9000)
    assert not rules.explicitly_allows_address("127.0.0.1", 9001)


@pytest.mark.parametrize("ip,reason", [
    ("127.0.0.5", "loopback"), ("::1", "loopback"), ("169.254.169.254", "metadata"), ("fe80::1", "link-local"),
    ("0.0.0.0", "unspecified"), ("::ffff:127.0.0.1", "loopback"), ("224.0.0.1", "multicast"),
    # IPv6 spellings that carry an IPv4 address, delivered there by a translating network
    ("64:ff9b::7f00:1", "loopback"), ("::127.0.0.1", "loopback"), ("2002:7f00:1::", "loopback"),
    ("::ffff:0:7f00:1", "loopback"), ("64:ff9b::a9fe:a9fe", "metadata"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),  # Teredo, client 127.0.0.1 (bits inverted)
])
def test_forbidden_addresses(ip, reason):
    assert reason in forbidden_reason(ip)


def test_public_address_is_allowed():
    assert forbidden_reason("93.184.216.34") is None
    assert forbidden_reason("2606:4700::1111") is None
    assert forbidden_reason("64:ff9b::5db8:d822") is None  # NAT64 of 93.184.216.34


def test_ipv6_carrying_a_private_ipv4_is_private():
    from gtd.sandbox.network.addresses import private_reason

    assert private_reason("64:ff9b::a00:1") and private_reason("2002:c0a8:101::")  # 10.0.0.1, 192.168.1.1
    assert private_reason("2606:4700::1111") is None


def test_proxy_authorize_records_denials_and_asks_decider():
    denied, asked = [], []
    proxy = FilteringProxy(DomainRules.parse(["ok.test"], ["bad.test"]), "tok",
                           ask=lambda h, p: asked.append((h, p)) or h == "maybe.test",
                           on_denied=lambda h, p, r: denied.append((h, p, r)),
                           resolver=lambda h, p: ["127.0.0.1"])
    assert not proxy.authorize("bad.test", 443).ok
    assert not proxy.authorize("no.test", 443).ok
    v = proxy.authorize("maybe.test", 443)  # approved, but resolves to loopback: still refused
    assert not v.ok and "loopback" in v.reason
    assert asked == [("no.test", 443), ("maybe.test", 443)]
    assert [d[:2] for d in denied] == [("bad.test", 443), ("no.test", 443), ("maybe.test", 443)]
    assert denied[0][2] == "denied by rule"


def test_failing_decider_fails_closed():
    proxy = FilteringProxy(DomainRules(), "tok", ask=lambda h, p: 1 / 0)
    v = proxy.authorize("x.test", 443)
    assert not v.ok and v.denied and "decider failed" in v.reason


def test_stop_serving_ends_the_accept_thread_before_the_descriptor_can_be_reused():
    # Closing a listener while its thread is about to call accept() lets that thread accept on whatever
    # socket reuses the descriptor number next (the flake where a Go test got an SSH stand-in's banner).
    import socket

    proxy = FilteringProxy(DomainRules(), "tok")
    listeners = [socket.create_server(("127.0.0.1", 0)) for _ in range(3)]
    for listener in listeners:
        proxy.serve(listener)
    accepting = [proxy._listeners[listener] for listener in listeners]  # each one's accept loop (a Background)
    proxy.stop_serving(*listeners[:2])  # several at once: all woken, then all waited for
    assert [loop.done for loop in accepting] == [True, True, False]
    assert [listener.fileno() for listener in listeners[:2]] == [-1, -1]
    proxy.close()
    assert accepting[2].done and listeners[2].fileno() == -1


@pytest.mark.parametrize("text,paths", [
    ("touch: cannot touch '/x/y': Read-only file system", ["/x/y"]),
    ("bash: line 1: /etc/z: Permission denied", ["/etc/z"]),
    ("Error: EROFS: read-only file system, open '/r/.git/hooks/pre-commit'", ["/r/.git/hooks/pre-commit"]),
    ("EACCES: permission denied, open '/r/a b.txt'", ["/r/a b.txt"]),
    ("PermissionError: [Errno 13] Permission denied: '/h/.ssh/id'", ["/h/.ssh/id"]),
    ("OSError: [Errno 30] Read-only file system: '/w/x'", ["/w/x"]),
    ("mkdir: cannot create directory \u2018/w/.vscode\u2019: Read-only file system", ["/w/.vscode"]),
    ("sh: 1: cannot create .bashrc: Read-only file system", [".bashrc"]),
    ("error: could not lock config file .git/config: Read-only file system", [".git/config"]),
    ("fatal: Unable to create '/repo/.git/index.lock': Read-only file system.", ["/repo/.git/index.lock"]),
    ("rm: cannot remove '.bashrc': Device or resource busy", [".bashrc"]),
    ("ln: failed to create hard link 'cfg' => '.git/config': Invalid cross-device link", ["cfg"]),
    ("a: cannot touch '/a': Read-only file system\nb: cannot touch '/a': Read-only file system", ["/a"]),
    ("all fine\nPermission denied (publickey).", []),
    ("", []),
])
def test_denied_write_paths(text, paths):
    assert denied_write_paths(text) == paths


def test_denied_write_paths_from_a_real_sandbox_run_match(tmp_path):
    text = "/bin/sh: 1: cannot create /w/.bashrc: Read-only file system\n"
    assert denied_write_paths(text) == ["/w/.bashrc"]


# -- policy ----------------------------------------------------------------------------------

def test_levels_follow_phases_and_inherit_rules(repo, home):
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {
        "readonly": {"writablePaths": ["~/.cache/a"], "allowDomains": ["ro.test"], "denyReadPaths": ["secret.txt"]},
        "readwrite": {"allowDomains": ["rw.test"]},
        "network": {"allowDomains": ["net.test"], "denyDomains": ["bad.test"]},
    }}})
    plan = build_policy(cfg, workspace=repo, phase=Phase.PLAN, home=home)
    assert plan.level is Level.READONLY and plan.writable[0] == repo / "TODO.md"
    assert repo not in plan.writable and home / ".cache/a" in plan.writable
    assert plan.allow_domains == ("ro.test",)
    assert "bad.test" in plan.deny_domains  # a deny anywhere applies everywhere
    assert repo / "secret.txt" in plan.deny_read and home / ".ssh" in plan.deny_read
    build = build_policy(cfg, workspace=repo, phase=Phase.BUILD, home=home)
    assert build.level is Level.READWRITE and repo in build.writable
    assert build.allow_domains == ("ro.test", "rw.test")
    net = build_policy(cfg, workspace=repo, level=Level.NETWORK, home=home)
    assert net.allow_domains == ("ro.test", "rw.test", "net.test")
    full = build_policy(cfg, workspace=repo, level=Level.FULL, home=home)
    assert full.unrestricted and full.to_dict()["filesystem"] == "unrestricted"


def test_needs_are_part_of_every_level(repo, home):
    needs = SandboxNeeds(model_hosts=["api.anthropic.com:443"], writable_dirs=[home / ".claude"],
                         protected_paths=[home / ".claude/settings.json"], env_passthrough=["ANTHROPIC_API_KEY"])
    p = build_policy(GtdConfig(), workspace=repo, level=Level.READONLY, needs=needs, home=home)
    assert p.reachable == ("api.anthropic.com:443",)
    assert home / ".claude" in p.writable and home / ".claude/settings.json" in p.protected
    assert p.env_passthrough == ("ANTHROPIC_API_KEY",)


def test_protected_discovery_covers_hookspath_nested_repos_and_submodules(repo, home, tmp_path):
    git("config", "core.hooksPath", ".githooks", cwd=repo)
    (repo / "a/b").mkdir(parents=True)
    git("init", "-q", cwd=repo / "a/b")
    (home / ".gitconfig").write_text("[core]\n\thooksPath = ~/global-hooks\n")
    p = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, home=home)
    for path in (repo / ".githooks", repo / ".git", repo / "a/b/.git", repo / "a/b/.vscode", home / "global-hooks",
                 repo / ".gtdrc.json"):  # each git dir as a whole
        assert path in p.protected, path


def test_malformed_domain_in_config_fails_early(repo, home):
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"network": {"allowDomains": ["bad*.com"]}}}})
    with pytest.raises(ValueError):
        build_policy(cfg, workspace=repo, level=Level.NETWORK, home=home)


def test_a_serving_proxy_gets_the_gil_back_within_half_a_millisecond():
    """Once the proxy serves, a CPU-bound gtd thread (the live view, parsing the agent's stream) must hand
    the GIL to a waiting proxy thread within 0.5 ms, not Python's 5 ms: each blocking call of a hand-shake
    waited that long, +25-36 ms per connection (bench_proxy.py --busy-interpreter). A fresh interpreter,
    since the setting is process-wide; one already lower is left alone."""
    import subprocess
    import sys

    script = ("import socket, sys\n"
              "from gtd.sandbox.policy.domains import DomainRules\n"
              "from gtd.sandbox.network.proxy import FilteringProxy\n"
              "sys.setswitchinterval(float(sys.argv[1]))\n"
              "proxy = FilteringProxy(DomainRules(), 'tok')\n"
              "before = sys.getswitchinterval()\n"
              "listener = socket.create_server(('127.0.0.1', 0))\n"
              "proxy.serve(listener)\n"
              "print(before, sys.getswitchinterval())\n"
              "proxy.close()\n")
    for start, expected in ((0.005, 0.0005), (0.0001, 0.0001)):
        out = subprocess.run([sys.executable, "-c", script, str(start)], capture_output=True, text=True, check=True)
        before, after = map(float, out.stdout.split())
        assert before == pytest.approx(start) and after == pytest.approx(expected)


@pytest.mark.parametrize("raw, expected", [
    ("~", "/h/me"), ("~/", "/h/me"), ("~/.cache//pip/", "/h/me/.cache/pip"), ("~/a/../b", "/h/me/b"),
    ("~user/x", "/w/s/~user/x"), ("", "/w/s"), (".", "/w/s"), ("build/", "/w/s/build"), ("../up", "/w/up"),
    ("/abs//x/./y", "/abs/x/y"), ("//two", "//two"), ("/", "/"),
])
def test_config_paths_resolve_under_home_or_the_workspace(raw, expected):
    """How a configured path (writablePaths, denyRead, an agent's needs) becomes an absolute one."""
    from pathlib import Path

    from gtd.sandbox.policy.sandbox_policy import _resolve

    assert _resolve(raw, workspace=Path("/w/s"), home=Path("/h/me")) == Path(expected)


def test_protected_paths_are_normalised_once_each_in_order(tmp_path):
    from pathlib import Path

    from gtd.sandbox.policy.sandbox_policy import _unique_normalised

    paths = [Path("/a/b"), "/a//b/", Path("/a/c/../d"), "/a/d", Path("/x")]
    assert _unique_normalised(paths) == (Path("/a/b"), Path("/a/d"), Path("/x"))
    assert all(isinstance(p, Path) for p in _unique_normalised(paths))
