"""A host refused in this run is answered so the client gives up at once, and the screen says it once.

pip retries every failed attempt to reach a server (a CONNECT answered 403 too) 5 times with 0.5, 1, 2
and 4 s between them: at least 7.5 s per URL. gtd answers pip's repeats inside TLS (gtd.sandbox.network.refusal_tls)
so pip's first retry already gets an HTTP 403 and stops. npm, curl and git stop at the plain CONNECT 403;
they keep it (npm retries a certificate it does not trust for over a minute).
Real `gtd sandbox run`, real pip and npm, a local registry for what is allowed, a name no rule allows.
"""

from __future__ import annotations

import shutil
import sys
import time

import pytest

from support import run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")]

DENIED = "pypi.denied.test"
PIP_BACKOFF = 0.5 + 1 + 2 + 4  # urllib3's sleeps between pip's 5 retries of one URL: the old time to give up


def _allow_local(isolated_home, port: int) -> None:
    config = isolated_home / ".config" / "gtd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[sandbox.levels.network]\nallowDomains = ["127.0.0.1:{port}"]\nhostLoopbackPorts = [{port}]\n')


def _refusal_lines(stderr: str, target: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"gtd sandbox: refused network {target}")]


def test_pip_gives_up_on_a_refused_index_at_its_first_retry_and_the_refusal_is_said_once(repo, index, isolated_home):
    _allow_local(isolated_home, index.port)
    pip = (f"{sys.executable} -m pip download --no-deps --no-cache-dir -d dl --index-url http://127.0.0.1:{index.port}/simple/"
           f" --extra-index-url https://{DENIED}/simple/ gtdwheel")
    start = time.monotonic()
    result = run_gtd("sandbox", "run", "--level", "network", "--", "sh", "-c", pip, cwd=repo, timeout=120)
    elapsed = time.monotonic() - start
    out = result.stdout + result.stderr
    assert (repo / "dl").is_dir() and [p.name for p in (repo / "dl").iterdir()] == ["gtdwheel-1.0-py3-none-any.whl"], out
    # The first refusal is answered as before (a CONNECT 403: pip retries once); the retry gets gtd's 403 from
    # the "server" and pip moves on. The old answer cost at least PIP_BACKOFF in sleeps alone.
    assert out.count("Retrying (Retry(") == 1, out
    assert "Tunnel connection failed: 403 Forbidden" in out
    assert elapsed < PIP_BACKOFF * 0.8, f"pip took {elapsed:.1f} s to give up on {DENIED}"
    lines = _refusal_lines(result.stderr, f"{DENIED}:443")
    assert len(lines) == 2, result.stderr  # the refusal, then its repeat counted once at the end
    assert "(not approved)" in lines[0] and "1 more time(s), 2 in all" in lines[1], lines


def test_the_ca_gtd_refuses_with_is_made_only_when_pip_is_refused_and_its_key_stays_outside(repo, index, isolated_home):
    _allow_local(isolated_home, index.port)
    look = "ls -A /tmp/.gtd/tls; grep -c 'BEGIN CERTIFICATE' /tmp/.gtd/tls/bundle.pem; grep -c PRIVATE /tmp/.gtd/tls/bundle.pem"
    pip = (f"{sys.executable} -m pip download -q --no-deps --no-cache-dir -d dl --index-url http://127.0.0.1:{index.port}/simple/"
           f" --extra-index-url https://{DENIED}/simple/ gtdwheel 2>/dev/null")
    result = run_gtd("sandbox", "run", "--level", "network", "--", "sh", "-c", f"{look}; {pip}; {look}", cwd=repo)
    first, after = result.stdout.splitlines()[:3], result.stdout.splitlines()[3:6]
    assert first[0] == after[0] == "bundle.pem", result.stdout  # no key, no leaf certificate in the sandbox
    assert int(after[1]) == int(first[1]) + 1, result.stdout  # gtd's CA, added at pip's first refusal
    assert first[2] == after[2] == "0"


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("curl") is None, reason="needs npm and curl")
def test_npm_and_curl_keep_the_plain_403_and_give_up_at_once(repo, npm_registry, isolated_home):
    _allow_local(isolated_home, npm_registry.port)
    cache = repo.parent / "npm-cache"
    view = f"npm view --cache {cache} --registry https://npm.denied.test/ gtd-shout version"
    local = f"npm view --cache {cache} --registry http://127.0.0.1:{npm_registry.port}/ gtd-shout version"
    script = f"{local}; {view}; {view}; curl -sS https://npm.denied.test/ 2>&1; curl -sS https://npm.denied.test/ 2>&1"
    start = time.monotonic()
    result = run_gtd("sandbox", "run", "--level", "network", "--", "sh", "-c", script, cwd=repo, timeout=120)
    elapsed = time.monotonic() - start
    out = result.stdout + result.stderr
    assert result.stdout.startswith("1.0.0\n"), out
    assert out.count("403 Forbidden - GET https://npm.denied.test/gtd-shout") == 2, out  # npm's E403, both times
    assert out.count("CONNECT tunnel failed, response 403") == 2, out  # curl: the plain 403 on a repeat too
    assert elapsed < 30, f"{elapsed:.1f} s"  # npm retrying a certificate it does not trust takes over 60 s
    lines = _refusal_lines(result.stderr, "npm.denied.test:443")
    assert len(lines) == 2 and "3 more time(s), 4 in all" in lines[1], result.stderr
