"""Real cargo inside the sandbox and outside, against a sparse registry the test serves on loopback
(named by the person's ~/.cargo/config.toml, as a company mirror would be): `cargo fetch` at network as
outside, an offline `cargo build` at readwrite that reads the user's registry cache (CARGO_HOME/registry),
and that cache never written from inside."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gtd.config.schema import Level
from registries import REGISTRY_HOST, tree_state
from workload_support import allow_registry, isolate_cargo, run


def _cargo_version() -> tuple[int, int]:
    """cargo's (major, minor), or (0, 0) when there is none. Sparse registries need cargo 1.68 or later."""
    if shutil.which("cargo") is None:
        return (0, 0)
    out = subprocess.run(["cargo", "--version"], capture_output=True, text=True).stdout
    match = re.match(r"cargo (\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed"),
              pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed for this user"),
              pytest.mark.skipif(_cargo_version() < (1, 68), reason="needs cargo 1.68+ (sparse registries; rustup's "
                                 "stable has it, Debian bookworm's cargo 0.66 does not)")]

LIB = 'pub fn hello(name: &str) -> String { format!("hello {}", name) }\n'
MAIN = 'fn main() { println!("{}", gtdgreet::hello("sandbox")); }\n'
RUN = "cargo build -q {flags} && ./target/debug/app"


@pytest.fixture
def crates(file_registry):
    file_registry.add_crate("gtdgreet", "0.1.0", LIB)
    return file_registry


@pytest.fixture(autouse=True)
def cargo_env(monkeypatch):
    isolate_cargo(monkeypatch)
    monkeypatch.setenv("CARGO_TERM_COLOR", "never")


def use_registry(home: Path, url: str) -> None:
    """~/.cargo/config.toml: crates.io replaced by the local sparse registry."""
    config = home / ".cargo" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[source.crates-io]\nreplace-with = "local"\n\n[source.local]\nregistry = "sparse+{url}/index/"\n')


def project(root: Path) -> None:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.0.0"\nedition = "2018"\n\n'
                                     '[dependencies]\ngtdgreet = "0.1"\n')
    (root / "src" / "main.rs").write_text(MAIN)


def test_cargo_offline_build_at_readwrite_reads_the_users_registry_cache(sandbox, repo, crates, isolated_home, tmp_path):
    use_registry(isolated_home, crates.url())
    host_project = tmp_path / "host-app"
    project(host_project)
    outside = run(None, RUN.format(flags=""), host_project)
    assert outside.returncode == 0 and outside.stdout == "hello sandbox\n", outside.stderr
    cache = isolated_home / ".cargo" / "registry"
    before = tree_state(cache)
    assert any(k.endswith("gtdgreet-0.1.0.crate") for k in before), sorted(before)

    project(repo)
    session = sandbox(Level.READWRITE)  # no registry reachable: only the cache can serve this
    crates.requests.clear()
    inside = run(session, RUN.format(flags="--offline"), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout == "hello sandbox\n"
    assert crates.requests == [] and session.violations == []
    assert tree_state(cache) == before, "the user's cargo registry cache was written from inside the sandbox"


def test_cargo_fetch_at_network_from_the_users_registry_leaves_their_cache_empty(sandbox, repo, crates, isolated_home):
    use_registry(isolated_home, crates.url(REGISTRY_HOST))
    project(repo)
    # The host comes from the person's own ~/.cargo/config.toml: allowed at network without a rule naming it.
    session = sandbox(Level.NETWORK, config=allow_registry(crates.port, name=False))
    inside = run(session, f"cargo fetch && {RUN.format(flags='--offline')}", repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout == "hello sandbox\n"
    assert "/dl/gtdgreet/0.1.0/download" in crates.requests
    assert session.violations == []
    assert tree_state(isolated_home / ".cargo" / "registry") == {}


def test_cargo_offline_build_without_a_cache_fails_inside_as_outside(sandbox, repo, crates, isolated_home, tmp_path):
    """The control: the offline build above works only because it reads the user's registry cache."""
    use_registry(isolated_home, crates.url())
    host_project = tmp_path / "host-app"
    project(host_project)
    project(repo)
    outside = run(None, RUN.format(flags="--offline"), host_project)
    inside = run(sandbox(Level.READWRITE), RUN.format(flags="--offline"), repo)
    assert outside.returncode != 0 and inside.returncode != 0
    assert "gtdgreet" in outside.stderr and "gtdgreet" in inside.stderr
    assert "offline" in inside.stderr, inside.stderr
