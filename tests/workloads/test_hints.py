"""A write the sandbox refused, reported by npm as a network failure: gtd names the refused path."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from gtd.config.schema import Level
from gtd.sandbox.diagnose.hints import misleading_error_hints
from support import git, run_gtd
from workload_support import allow_registry, run

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="needs bwrap and npm")]


def _install(port: int, cache) -> str:
    return f"npm install --no-audit --fetch-retries 0 --cache {cache} --registry http://127.0.0.1:{port}/ gtd-shout"


def test_npm_blaming_the_network_for_a_read_only_cache_gets_a_hint_naming_the_path(sandbox, repo, npm_registry, isolated_home):
    cache = isolated_home / "team-cache"  # not a cache gtd knows, so read-only inside like the rest of HOME
    cache.mkdir()
    session = sandbox(Level.NETWORK, config=allow_registry(npm_registry.port))
    r = run(session, _install(npm_registry.port, cache), repo)
    assert r.returncode != 0 and "while trying to fetch" in r.stderr, r.stderr  # npm's own words: a fetch failed
    hints = misleading_error_hints(r.stdout + r.stderr, session.policy)
    assert hints and all(str(cache) in h for h in hints)
    assert "not writable at level network" in hints[0] and "writablePaths" in hints[0]
    assert misleading_error_hints("npm error network request to http://x.test/ failed, reason: ECONNREFUSED",
                                  session.policy) == []  # a real network error: nothing refused
    assert misleading_error_hints("sh: 1: cannot create /etc/network/registry.conf: Read-only file system",
                                  session.policy) == []  # a plain refused write: the error already says so


def test_the_build_phase_shows_the_hint_and_asks_for_no_host(repo, npm_registry, isolated_home):
    cache = isolated_home / "team-cache"
    cache.mkdir()
    user_config = isolated_home / ".config" / "gtd" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(f'[sandbox.phases]\nbuild = "network"\n[sandbox.levels.network]\n'
                           f'allowDomains = ["127.0.0.1:{npm_registry.port}"]\n'
                           f'hostLoopbackPorts = [{npm_registry.port}]\n')  # 127.0.0.1 inside is the sandbox's own
    script = repo.parent / "script.json"
    script.write_text(json.dumps({
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content":
                  "# Shout\n\n## Action items\n- [ ] Add shout\n  - Tests: npm install\n\n## Open questions\n\n## Learnings\n"}}]}],
        "build": [{"actions": [{"write": {"path": "shout.js", "content": "module.exports = 1;\n"}}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script), "testRetries": 0,
                                                  "testCommand": _install(npm_registry.port, cache)}))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "configure gtd")
    (repo / "TODO.md").write_text("# Shout\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    result = run_gtd("build", cwd=repo, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"the cause is the sandbox refusing to write {cache}" in result.stderr
    assert "escalation_pending" not in result.stdout


def test_sandbox_run_shows_the_hint_on_stderr_and_leaves_stdout_to_the_command(repo, npm_registry, isolated_home):
    cache = isolated_home / "team-cache"
    cache.mkdir()
    user_config = isolated_home / ".config" / "gtd" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(f'[sandbox.levels.network]\nallowDomains = ["127.0.0.1:{npm_registry.port}"]\n'
                           f'hostLoopbackPorts = [{npm_registry.port}]\n')
    script = f"echo the-command-said-this; {_install(npm_registry.port, cache)} >/dev/null"
    result = run_gtd("sandbox", "run", "--level", "network", "--", "sh", "-c", script, cwd=repo, timeout=300)
    assert result.returncode not in (0, 4), result.stdout + result.stderr  # npm's own failure, passed through
    assert result.stdout == "the-command-said-this\n"
    assert "while trying to fetch" in result.stderr
    assert f"[gtd] hint: this error mentions the network, but the cause is the sandbox refusing to write {cache}" \
        in result.stderr
    audit = json.loads(run_gtd("audit", "--json", cwd=repo).stdout)
    assert any(e.get("event") == "hint" and str(cache) in e["hints"][0] for e in audit), audit


def test_sandbox_run_shows_no_hint_when_the_command_succeeds_or_fails_for_another_reason(repo):
    ok = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c",
                 "touch /usr/x; echo 'fetch failed' >&2; true", cwd=repo)
    assert ok.returncode == 0 and "[gtd] hint" not in ok.stderr, ok.stderr
    failed = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c", "echo 'network is down' >&2; exit 3",
                     cwd=repo)
    assert failed.returncode == 3 and "[gtd] hint" not in failed.stderr, failed.stderr


def test_a_server_on_the_hosts_loopback_refused_inside_gets_a_hint_naming_hostloopbackports(repo, registry):
    """curl and Node say only "Connection refused" for 127.0.0.1:PORT inside, where the host's server is
    not: `gtd sandbox run` names the setting that forwards the port. None for a port the host does not
    serve, nor for one already forwarded."""
    port = registry.port  # a server listening on the host's loopback
    fetch = (f"node -e \"fetch('http://127.0.0.1:{port}/').catch(e => {{ console.error(e.cause.message); "
             "process.exit(1) })\"")
    for command in (f"curl -sS http://localhost:{port}/", fetch):
        r = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c", command, cwd=repo)
        assert r.returncode != 0
        assert f"add {port} to sandbox.levels.readwrite.hostLoopbackPorts" in r.stderr, r.stderr
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"levels": {"readwrite": {"hostLoopbackPorts": [port]}}}}))
    assert run_gtd("trust", cwd=repo).returncode == 0
    r = run_gtd("sandbox", "run", "--level", "readwrite", "--", "curl", "-sS", "-o", "/dev/null",
                f"http://127.0.0.1:{port}/simple/", cwd=repo)
    assert r.returncode == 0, r.stderr  # reached the host's server
    assert "hint" not in r.stderr
    with socket.socket() as probe:  # a port nothing on the host listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    r = run_gtd("sandbox", "run", "--level", "network", "--", "curl", "-sS", f"http://127.0.0.1:{closed}/", cwd=repo)
    assert r.returncode == 7 and "hint" not in r.stderr, r.stderr


def test_the_host_loopback_hint_stays_out_of_the_audit_log_every_sandbox_can_read(repo, registry):
    """The person sees which host port serves on screen; the audit log does not record it (the refused-write
    hints, which name only what the command itself tried, are recorded). gtd's state dir is where a sandbox
    could read the log wherever it is not in the hidden HOME (issue 23: here it is, so not even that)."""
    from gtd.audit import AUDIT_FILE
    from gtd.paths import project_state_dir

    r = run_gtd("sandbox", "run", "--level", "readwrite", "--", "curl", "-sS", f"http://127.0.0.1:{registry.port}/",
                cwd=repo)
    assert f"add {registry.port} to sandbox.levels.readwrite.hostLoopbackPorts" in r.stderr, r.stderr
    audit = (project_state_dir(repo) / AUDIT_FILE).read_text()
    assert '"event": "sandbox_run"' in audit, audit
    assert "hostLoopbackPorts" not in audit and f":{registry.port}" not in audit, audit
    inside = run_gtd("sandbox", "run", "--level", "readwrite", "--", "cat", str(project_state_dir(repo) / AUDIT_FILE),
                     cwd=repo)
    assert inside.returncode != 0 and "sandbox_run" not in inside.stdout, inside.stdout


def test_pythons_urllib_sending_ipv6_loopback_through_the_proxy_is_told_where_its_server_is(repo):
    """NO_PROXY cannot spell "[::1]" (httpx rejects it), so urllib proxies http://[::1]:PORT/ for a server
    the command started itself: the refusal says to use 127.0.0.1 or localhost, not only hostLoopbackPorts."""
    script = ("python3 -m http.server 8765 --bind ::1 >/dev/null 2>&1 & sleep 1; "
              "python3 -c \"import urllib.request as u; u.urlopen('http://[::1]:8765/')\"; "
              "code=$?; curl -sS -o /dev/null -g 'http://[::1]:8765/' && echo direct-ok; kill $!; exit $code")
    r = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c", script, cwd=repo)
    assert r.returncode != 0 and "direct-ok" in r.stdout, r.stdout + r.stderr  # the server is there
    assert "refused network [::1]:8765" in r.stderr
    assert "a server started there is reached directly at 127.0.0.1 or localhost" in r.stderr, r.stderr


@pytest.mark.parametrize("error", [
    "Error: connect ECONNREFUSED 127.0.0.1:{port}",
    "Error: connect ECONNREFUSED ::1:{port}",  # Node tries localhost's IPv6 address first
    "curl: (7) Failed to connect to localhost port {port} after 0 ms: Couldn't connect to server",
    'psycopg2.OperationalError: connection to server at "localhost" (127.0.0.1), port {port} failed: Connection refused',
    "Could not connect to Redis at 127.0.0.1:{port}: Connection refused",
    "HTTPConnectionPool(host='localhost', port={port}): Max retries exceeded (Connection refused)",
])
def test_each_clients_wording_of_a_refused_host_loopback_port_gets_the_hint(repo, error):
    """A test suite needing the database or cache the person runs on this machine: every client's
    "Connection refused" for a port the host serves names hostLoopbackPorts."""
    from gtd.config.schema import GtdConfig
    from gtd.sandbox.policy.sandbox_policy import build_policy

    with socket.socket() as server:  # the host's service
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE)
        hints = misleading_error_hints(error.format(port=port), policy)
    assert len(hints) == 1 and f"add {port} to sandbox.levels.readwrite.hostLoopbackPorts" in hints[0], hints


def test_the_agent_is_not_told_which_host_loopback_ports_serve(repo, registry):
    """A build's tests fail with "Connection refused" for 127.0.0.1:PORT while the host serves PORT: the person
    gets the hostLoopbackPorts hint, but the output handed back to the agent does not carry it (the ports in
    an output are the agent's choice; the hint would tell it which of the host's ports have a server)."""
    hint = "inside the sandbox is the sandbox's own loopback, where nothing listens"
    script = repo.parent / "script.json"
    script.write_text(json.dumps({
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content":
                  "# Probe\n\n## Action items\n- [ ] Add probe\n  - Tests: curl\n\n## Open questions\n\n## Learnings\n"}}]}],
        "build": [{"when": hint, "actions": [{"write": {"path": "told.txt", "content": "the agent saw the hint\n"}}]},
                  {"actions": [{"write": {"path": "probe.txt", "content": "1\n"}}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({
        "provider": "scripted", "script": str(script), "testRetries": 1,
        "testCommand": f"curl -sS --max-time 5 http://127.0.0.1:{registry.port}/"}))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "configure gtd")
    (repo / "TODO.md").write_text("# Probe\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    result = run_gtd("build", cwd=repo, timeout=300)
    assert result.returncode != 0, result.stdout + result.stderr
    assert hint in result.stderr and f"add {registry.port} to sandbox.levels" in result.stderr, result.stderr
    assert not (repo / "told.txt").exists(), "the retry prompt carried the host-loopback hint to the agent"
    audit = run_gtd("audit", "--json", cwd=repo).stdout  # readable inside too: the hint is on screen only
    assert "hostLoopbackPorts" not in audit and f":{registry.port}" not in audit, audit
