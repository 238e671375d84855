"""Everyday workloads through the Landlock backend (docs/landlock-backend.md): pip builds an sdist and npm
installs a dependency tree from the local registry, through gtd's proxy, into directories of the work
tree (the root itself takes no new entries there), and the user's caches stay untouched."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.linux.landlock import abi_version
from registries import REGISTRY_HOST, tree_state
from workload_support import run

pytestmark = [pytest.mark.landlock,
              pytest.mark.skipif(abi_version() < 4, reason="the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")]


def through_proxy(port: int) -> GtdConfig:
    """registry.test reached through the proxy only (no hostLoopbackPorts: no direct connection)."""
    return GtdConfig.model_validate({"sandbox": {"backend": "landlock", "levels": {"network": {
        "allowDomains": [f"127.0.0.1:{port}", f"{REGISTRY_HOST}:{port}"]}}}})


def test_pip_builds_an_sdist_and_installs_a_wheel(sandbox, repo, index, isolated_home):
    (repo / "vendor").mkdir()
    session = sandbox(Level.NETWORK, config=through_proxy(index.port))
    assert session.backend.name == "landlock"
    inside = run(session, f"{sys.executable} -m pip install -q --no-input --retries 0 --timeout 10 --target vendor/site "
                          f"--trusted-host {REGISTRY_HOST} --index-url http://{REGISTRY_HOST}:{index.port}/simple/ gtdwheel gtdsdist && "
                          f"PYTHONPATH=vendor/site {sys.executable} -c 'import gtdwheel, gtdsdist; print(gtdwheel.VALUE, gtdsdist.VALUE)'",
                 repo)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout == "from-wheel built-from-sdist\n"
    assert tree_state(isolated_home / ".cache" / "pip") == {}


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm not installed")
def test_npm_installs_a_dependency_tree(sandbox, repo, registry, isolated_home):
    registry.add_npm_package("gtd-shout", "1.0.0", "module.exports = s => s.toUpperCase();\n")
    registry.add_npm_package("gtd-greet", "1.2.0", "const shout = require('gtd-shout');\n"
                             "module.exports = n => 'hello ' + shout(n);\n", {"gtd-shout": "^1.0.0"})
    web = repo / "web"
    web.mkdir()
    (web / "package.json").write_text(json.dumps({"name": "app", "version": "0.0.0", "private": True,
                                                  "dependencies": {"gtd-greet": "^1.0.0"}}))
    before = tree_state(isolated_home / ".npm")  # `npm pack` on the host made the registry's tarballs
    session = sandbox(Level.NETWORK, config=through_proxy(registry.port))
    inside = run(session, f"cd web && npm install --no-audit --no-fund --cache \"$TMPDIR/npm\" "
                          f"--registry http://{REGISTRY_HOST}:{registry.port}/ && "
                          "node -e \"console.log(require('gtd-greet')('sandbox'))\"", repo)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.strip().splitlines()[-1] == "hello SANDBOX"
    assert (web / "node_modules/gtd-shout/package.json").exists()
    assert tree_state(isolated_home / ".npm") == before


def test_a_missing_cache_home_is_a_private_one(sandbox, repo, isolated_home, monkeypatch):
    """HOME takes no new entries under this backend: with no cache home to read, tools get a private one
    (pip's sdist build made ~/.cache and failed on EACCES, as an unprivileged user)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(isolated_home / "no-cache-yet"))
    session = sandbox(Level.READWRITE, config=GtdConfig.model_validate({"sandbox": {"backend": "landlock"}}))
    r = run(session, 'mkdir -p "$XDG_CACHE_HOME/tool" && echo "$XDG_CACHE_HOME"', repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("/tmp/gtd-landlock-")
    assert not (isolated_home / "no-cache-yet").exists()


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm not installed")
def test_the_persons_npmrc_registry_is_used_and_its_token_stays_out(sandbox, repo, registry, isolated_home):
    # HOME is hidden and no mount puts gtd's generated ~/.npmrc in it: NPM_CONFIG_USERCONFIG names it instead.
    registry.add_npm_package("gtd-shout", "1.0.0", "module.exports = s => s.toUpperCase();\n")
    (isolated_home / ".npmrc").write_text(f"registry=http://{REGISTRY_HOST}:{registry.port}/\n"
                                          f"//{REGISTRY_HOST}:{registry.port}/:_authToken=NPM-SECRET-TOKEN\n")
    (repo / "web").mkdir()  # the workspace root takes no new entries here (docs/landlock-backend.md)
    (repo / "web" / "package.json").write_text(json.dumps({"name": "app", "version": "0.0.0", "private": True}))
    session = sandbox(Level.NETWORK, config=through_proxy(registry.port))
    inside = run(session, "npm config get registry; cd web && npm install --no-audit --no-fund --cache \"$TMPDIR/npm\""
                          " gtd-shout && node -e \"console.log(require('gtd-shout')('ok'))\"; cat \"$NPM_CONFIG_USERCONFIG\";"
                          " cat ~/.npmrc || echo hidden", repo)
    assert inside.returncode == 0, inside.stderr
    lines = inside.stdout.splitlines()
    assert lines[0] == f"http://{REGISTRY_HOST}:{registry.port}/" and "OK" in lines and lines[-1] == "hidden", lines
    assert "NPM-SECRET-TOKEN" not in inside.stdout
