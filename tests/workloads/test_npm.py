"""Real npm inside the sandbox and outside, against a local registry (packuments + `npm pack` tarballs):
the same tree gets installed, an offline install at readwrite is served from the user's cache, and the
user's cache (~/.npm) is never written from inside."""

from __future__ import annotations

import json
import shutil

import pytest

from gtd.config.schema import Level
from workload_support import allow_registry, run
from registries import REGISTRY_HOST, tree_state

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="needs bwrap and npm")]

CHECK = "node -e \"console.log(require('gtd-greet')('sandbox'))\""


@pytest.fixture
def npm_registry(registry):
    registry.add_npm_package("gtd-shout", "1.0.0", "module.exports = s => s.toUpperCase();\n")
    registry.add_npm_package("gtd-greet", "1.2.0", "const shout = require('gtd-shout');\n"
                             "module.exports = n => 'hello ' + shout(n);\n", {"gtd-shout": "^1.0.0"})
    return registry


def project(root) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({"name": "app", "version": "0.0.0", "private": True,
                                                   "dependencies": {"gtd-greet": "^1.0.0"}}))


def npm_install(host: str, port: int, *flags: str) -> str:
    return f"npm install --no-audit --no-fund --registry http://{host}:{port}/ {' '.join(flags)} && {CHECK}"


def modules(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in (root / "node_modules").rglob("*") if p.is_file())


def test_npm_install_at_network_as_outside_without_writing_the_users_cache(sandbox, repo, npm_registry, isolated_home, tmp_path):
    host_project = tmp_path / "host-app"
    project(host_project)
    outside = run(None, npm_install("127.0.0.1", npm_registry.port), host_project)
    assert outside.returncode == 0, outside.stderr
    cache = isolated_home / ".npm"
    before = tree_state(cache)
    assert any(k.startswith("_cacache/") for k in before)

    project(repo)
    session = sandbox(Level.NETWORK, config=allow_registry(npm_registry.port))
    inside = run(session, npm_install(REGISTRY_HOST, npm_registry.port), repo)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.splitlines()[-1] == outside.stdout.splitlines()[-1] == "hello SANDBOX"
    assert modules(repo) == modules(host_project)
    assert session.violations == []
    assert tree_state(cache) == before, "the user's npm cache was written from inside the sandbox"


def test_npm_offline_install_at_readwrite_is_served_from_the_users_cache(sandbox, repo, npm_registry, isolated_home, tmp_path):
    host_project = tmp_path / "host-app"
    project(host_project)
    assert run(None, npm_install("127.0.0.1", npm_registry.port), host_project).returncode == 0
    cache = isolated_home / ".npm"
    before = tree_state(cache)

    project(repo)
    session = sandbox(Level.READWRITE)  # the registry is out of reach: only the cache can serve this
    inside = run(session, npm_install("127.0.0.1", npm_registry.port, "--offline"), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.splitlines()[-1] == "hello SANDBOX"
    assert modules(repo) == modules(host_project)
    assert session.violations == []
    assert tree_state(cache) == before


def test_npm_offline_install_without_a_cache_fails_inside_as_outside(sandbox, repo, npm_registry, tmp_path):
    """The control: the offline install above works only because it reads the user's cache."""
    host_project = tmp_path / "host-app"
    project(host_project)
    outside = run(None, npm_install("127.0.0.1", npm_registry.port, "--offline"), host_project)
    project(repo)
    inside = run(sandbox(Level.READWRITE), npm_install("127.0.0.1", npm_registry.port, "--offline"), repo)
    assert outside.returncode != 0 and inside.returncode != 0
    assert "ENOTCACHED" in outside.stderr and "ENOTCACHED" in inside.stderr
