"""Real pip inside the sandbox and outside, against a local simple index (a wheel and an sdist pip must
build): the same packages get installed, the user's pip cache is read but never written."""

from __future__ import annotations

import shutil
import sys

import pytest

from gtd.config.schema import Level
from workload_support import allow_registry, run
from registries import REGISTRY_HOST, tree_state

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")]

PY = sys.executable
PACKAGES = "gtdwheel gtdsdist"
CHECK = f"{PY} -c 'import gtdwheel, gtdsdist; print(gtdwheel.VALUE, gtdsdist.VALUE)'"


def pip_install(target: str, host: str, port: int, *, quiet: bool = True) -> str:
    return (f"{PY} -m pip install {'-q ' if quiet else ''}--no-input --retries 0 --timeout 10 --target {target} --trusted-host {host} --index-url http://{host}:{port}/simple/ {PACKAGES}"
            f" && PYTHONPATH={target} {CHECK}")


def installed(root) -> list[str]:
    """What an install put in place, without the files that name how (RECORD, INSTALLER, REQUESTED)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.name not in ("RECORD", "INSTALLER", "REQUESTED"))


def test_pip_installs_a_wheel_and_builds_an_sdist_at_network_as_outside(sandbox, repo, index, isolated_home, tmp_path):
    outside = run(None, pip_install(str(tmp_path / "host-out"), "127.0.0.1", index.port), tmp_path)
    assert outside.returncode == 0, outside.stderr
    cache = isolated_home / ".cache" / "pip"
    before = tree_state(cache)
    assert any("wheels" in k for k in before), "pip cached the wheel it built from the sdist"

    session = sandbox(Level.NETWORK, config=allow_registry(index.port))
    inside = run(session, f"rm -rf out; {pip_install('out', REGISTRY_HOST, index.port)}", repo)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout == outside.stdout == "from-wheel built-from-sdist\n"
    assert installed(repo / "out") == installed(tmp_path / "host-out")
    assert session.violations == []
    assert tree_state(cache) == before, "the user's pip cache was written from inside the sandbox"


def test_pip_builds_an_sdist_inside_with_an_empty_cache_and_leaves_it_empty(sandbox, repo, index, isolated_home):
    session = sandbox(Level.NETWORK, config=allow_registry(index.port))
    inside = run(session, pip_install("out", REGISTRY_HOST, index.port), repo)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout == "from-wheel built-from-sdist\n"
    assert tree_state(isolated_home / ".cache" / "pip") == {}


def test_pip_inside_reads_the_users_cache(sandbox, repo, index, isolated_home, tmp_path):
    """pip always revalidates index pages (so it has no offline mode), but the downloads and the wheel it
    built from the sdist come from the user's cache: nothing is downloaded or built again."""
    outside = run(None, pip_install(str(tmp_path / "host-out"), "127.0.0.1", index.port, quiet=False), tmp_path)
    assert outside.returncode == 0 and "Building wheel for gtdsdist" in outside.stdout, outside.stdout + outside.stderr
    cache = isolated_home / ".cache" / "pip"
    before = tree_state(cache)
    session = sandbox(Level.NETWORK, config=allow_registry(index.port))
    inside = run(session, pip_install("out", "127.0.0.1", index.port, quiet=False), repo)
    assert inside.returncode == 0, inside.stderr
    assert "Using cached http://127.0.0.1:" in inside.stdout and "gtdwheel-1.0-py3-none-any.whl" in inside.stdout
    assert "Building wheel for gtdsdist" not in inside.stdout and "gtdsdist-1.0-py3-none-any.whl" in inside.stdout
    assert inside.stdout.splitlines()[-1] == "from-wheel built-from-sdist"
    assert tree_state(cache) == before
