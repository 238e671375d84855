"""The person's cargo, gradle and yarn settings under the Landlock backend (docs/landlock-backend.md): no mount
puts gtd's generated files in the hidden HOME, where the person's own stays, unreadable. Cargo and Gradle get a
private home holding gtd's file (gtd/sandbox/linux/tool_homes.py); yarn, which has no variable for it, stops,
and gtd says why. Real tools, against registries the tests serve on loopback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.linux.landlock import abi_version
from registries import REGISTRY_HOST, tree_state
from workload_support import add_greet_packages, greet_project, isolate_cargo, run

pytestmark = [pytest.mark.landlock,
              pytest.mark.skipif(abi_version() < 4, reason="the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")]

ROOT = Path(__file__).resolve().parents[2]
YARN1 = ROOT / ".tools" / "pkgmgrs" / "node_modules" / ".bin" / "yarn"
# Yarn berry's single-file build (npm's @yarnpkg/cli-dist): scripts/setup puts it in .tools/berry.
BERRY = Path(os.environ.get("GTD_TEST_YARN_BERRY")
             or ROOT / ".tools" / "berry" / "node_modules" / "@yarnpkg" / "cli-dist" / "bin" / "yarn.js")


def landlock(level: str = "network", port: int | None = None) -> GtdConfig:
    """The Landlock backend; registry.test reached through the proxy only."""
    allow = {"levels": {level: {"allowDomains": [f"127.0.0.1:{port}", f"{REGISTRY_HOST}:{port}"]}}} if port else {}
    return GtdConfig.model_validate({"sandbox": {"backend": "landlock", **allow}})


@pytest.fixture
def greet(registry):
    return add_greet_packages(registry)


@pytest.mark.parametrize("which", ["yarn 1", "yarn berry"])
def test_yarn_stopping_on_the_persons_hidden_rc_file_gets_a_hint(sandbox, repo, greet, isolated_home, which):
    """Yarn (1 and berry) reads ~/.yarnrc(.yml) even for `--version`-free commands and stops on EACCES: no
    variable points it at gtd's generated copy, so the person is told why and what lets it run."""
    from gtd.sandbox.diagnose.hints import split_hints

    web = greet_project(repo / "web")
    if which == "yarn 1":
        if not YARN1.exists() or shutil.which("node") is None:
            pytest.skip("yarn 1 not installed (scripts/setup)")
        rc, yarn = isolated_home / ".yarnrc", str(YARN1)
        rc.write_text(f'registry "http://{REGISTRY_HOST}:{greet.port}/"\n')
    else:
        if not BERRY.exists() or shutil.which("node") is None:
            missing = "yarn berry not installed: run scripts/setup (GTD_TEST_YARN_BERRY names its yarn.js)"
            pytest.fail(missing) if os.environ.get("CI") else pytest.skip(missing)  # never a silent skip in CI
        (web / ".yarn" / "releases").mkdir(parents=True)
        shutil.copy(BERRY, web / ".yarn" / "releases" / "yarn.cjs")  # as a project pins berry (yarnPath)
        rc, yarn = isolated_home / ".yarnrc.yml", "node .yarn/releases/yarn.cjs"
        rc.write_text(f'npmRegistryServer: "http://{REGISTRY_HOST}:{greet.port}"\n')
    session = sandbox(Level.NETWORK, config=landlock(port=greet.port))
    inside = run(session, f"cd web && {yarn} install", repo)
    assert inside.returncode != 0 and str(rc) in inside.stdout + inside.stderr, inside.stdout + inside.stderr
    told, person_only = split_hints(inside.stdout + inside.stderr, session.policy)
    hint = [h for h in person_only if "yarn stops on your ~/" + rc.name in h]
    assert len(hint) == 1 and "bubblewrap" in hint[0] and "YARN_NPM_REGISTRY_SERVER" in hint[0], person_only
    assert not any("readPaths" in h for h in person_only)  # showing the file would show its tokens


def test_gradle_gets_a_private_user_home_with_the_generated_properties(sandbox, repo, isolated_home, monkeypatch):
    """Gradle stops on an unreadable GRADLE_USER_HOME/gradle.properties: it gets a private home holding gtd's
    generated file, its caches linked to the person's. (Gradle itself does not start under this backend yet:
    "Could not determine a usable local IP", docs/landlock-backend.md.)"""
    gradle_home = isolated_home / ".gradle"
    (gradle_home / "caches" / "modules-2").mkdir(parents=True)
    (gradle_home / "gradle.properties").write_text("org.gradle.workers.max=7\nkotlin.code.style=official\n"
                                                   "systemProp.http.proxyPassword=GRADLE-SECRET\n")
    monkeypatch.setenv("GRADLE_USER_HOME", str(gradle_home))
    session = sandbox(Level.READWRITE, config=landlock("readwrite"))
    inside = run(session, 'cat "$GRADLE_USER_HOME/gradle.properties"; ls "$GRADLE_USER_HOME/caches"; '
                          f'cat {gradle_home}/gradle.properties || echo hidden', repo)
    lines = inside.stdout.splitlines()
    assert "org.gradle.workers.max=7" in lines and "kotlin.code.style=official" in lines, inside.stdout + inside.stderr
    assert "modules-2" in lines and lines[-1] == "hidden" and "GRADLE-SECRET" not in inside.stdout


@pytest.fixture
def cargo_env(monkeypatch):
    isolate_cargo(monkeypatch)


def cargo_project(root: Path, dependency: str) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.0.0"\nedition = "2018"\n\n'
                                     f'[dependencies]\ngtdgreet = {dependency}\n')
    (root / "src" / "main.rs").write_text('fn main() { println!("{}", gtdgreet::hello("sandbox")); }\n')
    return root


def _cargo_ok() -> bool:
    import re
    import subprocess

    if shutil.which("cargo") is None:
        return False
    match = re.match(r"cargo 1\.(\d+)", subprocess.run(["cargo", "--version"], capture_output=True, text=True).stdout)
    return bool(match) and int(match.group(1)) >= 68


DEPENDENCY = '{ version = "0.1", registry = "corp" }'


@pytest.mark.skipif(not _cargo_ok(), reason="needs cargo 1.68+ (sparse registries)")
def test_cargo_uses_the_registry_named_in_the_persons_cargo_config(sandbox, repo, file_registry, isolated_home,
                                                                  cargo_env, tmp_path):
    """Cargo stops on an unreadable ~/.cargo/config.toml: it gets a private CARGO_HOME holding gtd's generated
    config, its registry cache linked to the person's. The registry of their config ([registries.corp]) is
    the one cargo uses: the offline build finds the cache filled outside only under that registry."""
    file_registry.add_crate("gtdgreet", "0.1.0", 'pub fn hello(n: &str) -> String { format!("hello {}", n) }\n')
    config = isolated_home / ".cargo" / "config.toml"
    config.parent.mkdir(parents=True)
    (config.parent / "credentials.toml").write_text('[registries.corp]\ntoken = "CARGO-CREDENTIALS-TOKEN"\n')
    config.write_text(f'[registries.corp]\nindex = "sparse+{file_registry.url()}/index/"\n'
                      'token = "CARGO-SECRET-TOKEN"\n\n[net]\ngit-fetch-with-cli = true\n')

    build = "cargo build -q {flags} && ./target/debug/app"
    outside = run(None, build.format(flags=""), cargo_project(tmp_path / "host-app", DEPENDENCY))
    assert outside.returncode == 0 and outside.stdout == "hello sandbox\n", outside.stderr
    session = sandbox(Level.READWRITE, config=landlock("readwrite"))
    cache = isolated_home / ".cargo" / "registry"
    before = tree_state(cache)
    assert any(k.endswith("gtdgreet-0.1.0.crate") for k in before), sorted(before)
    session = sandbox(Level.READWRITE, config=landlock("readwrite"))  # no registry reachable: only the cache
    file_registry.requests.clear()
    inside = run(session, build.format(flags="--offline") + '; cat "$CARGO_HOME/config.toml"; '
                          'cat "$CARGO_HOME/credentials.toml" || echo no-credentials', cargo_project(repo / "app", DEPENDENCY))
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.splitlines()[0] == "hello sandbox", inside.stdout + inside.stderr
    assert "git-fetch-with-cli = true" in inside.stdout and "CARGO-SECRET-TOKEN" not in inside.stdout
    assert inside.stdout.splitlines()[-1] == "no-credentials"
    assert file_registry.requests == [] and tree_state(cache) == before


@pytest.mark.skipif(not _cargo_ok(), reason="needs cargo 1.68+ (sparse registries)")
def test_cargo_fetches_from_the_mirror_that_replaces_crates_io_in_the_persons_config(sandbox, repo, file_registry,
                                                                                   isolated_home, cargo_env):
    """Source replacement ([source.crates-io] replace-with), which no CARGO_ variable can express: a fetch at
    network goes to the person's mirror (the registry cache is a fresh one in the private CARGO_HOME)."""
    file_registry.add_crate("gtdgreet", "0.1.0", 'pub fn hello(n: &str) -> String { format!("hello {}", n) }\n')
    (isolated_home / ".cargo").mkdir()
    (isolated_home / ".cargo" / "config.toml").write_text(
        f'[source.crates-io]\nreplace-with = "mirror"\n\n[source.mirror]\nregistry = "sparse+{file_registry.url(REGISTRY_HOST)}/index/"\n')
    session = sandbox(Level.NETWORK, config=landlock(port=file_registry.port))
    inside = run(session, "cargo fetch && cargo build -q --offline && ./target/debug/app",
                 cargo_project(repo / "app", '"0.1"'))
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout == "hello sandbox\n"
    assert "/dl/gtdgreet/0.1.0/download" in file_registry.requests
    assert not (isolated_home / ".cargo" / "registry").exists()
