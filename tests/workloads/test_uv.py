"""Real uv inside the sandbox and outside, against the local simple index (a wheel and an sdist uv builds):
the same install, and an offline install at readwrite served from the user's uv cache, which stays unwritten."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from gtd.config.schema import Level
from registries import REGISTRY_HOST, tree_state
from workload_support import allow_registry, run

UV = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or not Path(UV).exists(), reason="needs bwrap and uv")]
CHECK = f"{sys.executable} -c 'import gtdwheel, gtdsdist; print(gtdwheel.VALUE, gtdsdist.VALUE)'"


def uv_install(target: str, host: str, port: int, *flags: str) -> str:
    return (f"{UV} pip install --quiet --no-progress --python {sys.executable} --target {target} "
            f"--index-url http://{host}:{port}/simple/ {' '.join(flags)} gtdwheel gtdsdist && PYTHONPATH={target} {CHECK}")


def test_uv_installs_at_network_as_outside_and_offline_at_readwrite_from_the_users_cache(sandbox, repo, index, isolated_home, tmp_path):
    outside = run(None, uv_install(str(tmp_path / "host-out"), "127.0.0.1", index.port), tmp_path)
    assert outside.returncode == 0, outside.stderr
    assert outside.stdout == "from-wheel built-from-sdist\n"
    cache = isolated_home / ".cache" / "uv"
    before = tree_state(cache)
    assert before

    inside = run(sandbox(Level.NETWORK, config=allow_registry(index.port)),
                 uv_install("out", REGISTRY_HOST, index.port), repo)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout == outside.stdout

    offline = run(sandbox(Level.READWRITE), f"rm -rf out; {uv_install('out', '127.0.0.1', index.port, '--offline')}", repo)
    assert offline.returncode == 0, offline.stderr
    assert offline.stdout == outside.stdout
    assert tree_state(cache) == before, "the user's uv cache was written from inside the sandbox"


def test_uv_offline_without_a_cache_fails_inside_as_outside(sandbox, repo, index, tmp_path, monkeypatch):
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv-cache"))
    outside = run(None, uv_install(str(tmp_path / "host-out"), "127.0.0.1", index.port, "--offline"), tmp_path)
    inside = run(sandbox(Level.READWRITE), uv_install("out", "127.0.0.1", index.port, "--offline"), repo)
    assert outside.returncode != 0 and inside.returncode != 0
    assert "not found in the cache" in outside.stderr and "not found in the cache" in inside.stderr
