"""Real Go inside the sandbox and outside, against a GOPROXY (the module proxy protocol's file layout)
the test serves on loopback: `go mod download` at network as outside, an offline `go build` at readwrite
that reads the user's module cache (GOMODCACHE) and build cache, and those caches never written from inside."""

from __future__ import annotations

import os
import shutil

import pytest

from gtd.config.schema import Level
from registries import REGISTRY_HOST, tree_state
from workload_support import allow_registry, run

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("go") is None,
                                 reason="needs bwrap and Go (scripts/setup installs golang-go)")]

MODULE = "example.test/greet"
GREET = 'package greet\n\nfunc Hello(name string) string { return "hello " + name }\n'
MAIN = f'package main\n\nimport (\n\t"fmt"\n\t"{MODULE}"\n)\n\nfunc main() {{ fmt.Println(greet.Hello("sandbox")) }}\n'


@pytest.fixture
def goproxy(file_registry):
    file_registry.add_go_module(MODULE, "v1.0.0", {"greet.go": GREET})
    return file_registry


@pytest.fixture(autouse=True)
def go_env(monkeypatch):
    """Go's own settings from the machine stay out; no checksum database (it would be the internet)."""
    for key in list(os.environ):
        if key.startswith("GO"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("GOSUMDB", "off")
    monkeypatch.setenv("GOTOOLCHAIN", "local")
    monkeypatch.setenv("GOFLAGS", "-mod=mod")


def project(root, go_sum: str = "") -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "go.mod").write_text(f"module example.test/app\n\ngo 1.18\n\nrequire {MODULE} v1.0.0\n")
    (root / "main.go").write_text(MAIN)
    if go_sum:
        (root / "go.sum").write_text(go_sum)


def go(proxy: str, command: str) -> str:
    return f"GOPROXY={proxy} {command}"


def download_outside(goproxy, root) -> None:
    """The person's own `go build` on the host fills their module and build caches, and writes go.sum."""
    project(root)
    r = run(None, go(goproxy.url(), "go mod download && go build -o app . && ./app"), root)
    assert r.returncode == 0 and r.stdout == "hello sandbox\n", r.stdout + r.stderr


def caches(home):
    return tree_state(home / "go" / "pkg" / "mod"), tree_state(home / ".cache" / "go-build")


def test_go_offline_build_at_readwrite_reads_the_users_module_cache(sandbox, repo, goproxy, isolated_home, tmp_path):
    download_outside(goproxy, tmp_path / "host-app")
    before = caches(isolated_home)
    assert any(k.startswith("cache/download/example.test/greet/@v/") for k in before[0])

    project(repo, (tmp_path / "host-app" / "go.sum").read_text())
    session = sandbox(Level.READWRITE)  # no registry reachable: only the cache can serve this
    goproxy.requests.clear()
    inside = run(session, go("off", "go build -o app . && ./app"), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout == "hello sandbox\n"
    assert goproxy.requests == [] and session.violations == []
    assert caches(isolated_home) == before, "the user's Go caches were written from inside the sandbox"


def test_go_mod_download_at_network_as_outside_leaves_the_users_caches_empty(sandbox, repo, goproxy, isolated_home, tmp_path):
    download_outside(goproxy, tmp_path / "host-app")  # only for go.sum: then the person's caches are emptied
    for cache in (isolated_home / "go", isolated_home / ".cache" / "go-build"):
        run(None, f"chmod -R u+w {cache} && rm -rf {cache}", tmp_path)
    assert caches(isolated_home) == ({}, {})

    project(repo, (tmp_path / "host-app" / "go.sum").read_text())
    session = sandbox(Level.NETWORK, config=allow_registry(goproxy.port))
    inside = run(session, go(f"http://{REGISTRY_HOST}:{goproxy.port}", "go mod download -x && go build -o app . && ./app"), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout == "hello sandbox\n"
    assert f"/{MODULE}/@v/v1.0.0.zip" in goproxy.requests
    assert session.violations == []
    assert caches(isolated_home) == ({}, {})


def test_go_offline_build_without_a_cache_fails_inside_as_outside(sandbox, repo, goproxy, isolated_home, tmp_path):
    """The control: the offline build above works only because it reads the user's module cache."""
    download_outside(goproxy, tmp_path / "host-app")
    go_sum = (tmp_path / "host-app" / "go.sum").read_text()
    run(None, f"chmod -R u+w {isolated_home / 'go'} && rm -rf {isolated_home / 'go'}", tmp_path)
    project(tmp_path / "again", go_sum)
    outside = run(None, go("off", "go build -o app ."), tmp_path / "again")
    project(repo, go_sum)
    inside = run(sandbox(Level.READWRITE), go("off", "go build -o app ."), repo)
    assert outside.returncode != 0 and inside.returncode != 0
    assert "module lookup disabled by GOPROXY=off" in outside.stderr
    assert "module lookup disabled by GOPROXY=off" in inside.stderr
