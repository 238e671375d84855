"""Real pnpm and yarn (classic) inside the sandbox and outside, against the local npm registry: the same
install, an offline install at readwrite served from the user's store/cache, which stays unwritten."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gtd.config.schema import Level
from registries import REGISTRY_HOST, tree_state
from workload_support import add_greet_packages, allow_registry, greet_project, run

BIN = Path(__file__).resolve().parents[2] / ".tools" / "pkgmgrs" / "node_modules" / ".bin"


def tool(name: str) -> str | None:
    found = BIN / name
    return str(found) if found.exists() else shutil.which(name)


pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]
CHECK = "node -e \"console.log(require('gtd-greet')('sandbox'))\""


@pytest.fixture
def npm_registry(registry):
    return add_greet_packages(registry)


@pytest.mark.skipif(tool("pnpm") is None, reason="pnpm not installed (scripts/setup installs it)")
def test_pnpm_at_network_as_outside_and_offline_at_readwrite_from_the_users_store(sandbox, repo, npm_registry, isolated_home, tmp_path):
    pnpm = tool("pnpm")
    install = f"{pnpm} install --reporter=silent --registry http://{{host}}:{npm_registry.port}/ {{flags}} && {CHECK}"
    outside = run(None, install.format(host="127.0.0.1", flags=""), greet_project(tmp_path / "host-app"))
    assert outside.returncode == 0, outside.stdout + outside.stderr
    store, cache = isolated_home / ".local/share/pnpm/store", isolated_home / ".cache/pnpm"
    before = (tree_state(store), tree_state(cache))
    assert before[0]

    greet_project(repo)
    inside = run(sandbox(Level.NETWORK, config=allow_registry(npm_registry.port)),
                 install.format(host=REGISTRY_HOST, flags=""), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.splitlines()[-1] == outside.stdout.splitlines()[-1] == "hello SANDBOX"

    offline = run(sandbox(Level.READWRITE), "rm -rf node_modules pnpm-lock.yaml; "
                  + install.format(host="127.0.0.1", flags="--offline"), repo)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert offline.stdout.splitlines()[-1] == "hello SANDBOX"
    assert (tree_state(store), tree_state(cache)) == before, "the user's pnpm store was written from inside the sandbox"


@pytest.mark.skipif(tool("yarn") is None, reason="yarn not installed (scripts/setup installs it)")
def test_yarn_at_network_as_outside_and_offline_at_readwrite_from_the_users_cache(sandbox, repo, npm_registry, isolated_home, tmp_path):
    yarn = tool("yarn")
    install = (f"{yarn} install --silent --non-interactive --no-progress --registry http://{{host}}:{npm_registry.port}/"
               f" {{flags}} && {CHECK}")
    host_app = greet_project(tmp_path / "host-app")
    outside = run(None, install.format(host="127.0.0.1", flags=""), host_app)
    assert outside.returncode == 0, outside.stdout + outside.stderr
    cache = isolated_home / ".cache/yarn"
    before = tree_state(cache)
    assert before

    greet_project(repo)
    inside = run(sandbox(Level.NETWORK, config=allow_registry(npm_registry.port)),
                 install.format(host=REGISTRY_HOST, flags=""), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.splitlines()[-1] == outside.stdout.splitlines()[-1] == "hello SANDBOX"

    shutil.copy(host_app / "yarn.lock", repo / "yarn.lock")  # a real project has its lockfile
    offline = run(sandbox(Level.READWRITE), "rm -rf node_modules; " + install.format(host="127.0.0.1", flags="--offline"), repo)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert offline.stdout.splitlines()[-1] == "hello SANDBOX"
    assert tree_state(cache) == before, "the user's yarn cache was written from inside the sandbox"
