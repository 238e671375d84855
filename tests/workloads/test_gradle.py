"""Real Gradle (Debian's gradle package) inside the sandbox and outside, against a Maven repository the
test serves on loopback: dependencies resolved at network as outside, an `--offline` build at readwrite
that reads the user's Gradle cache (GRADLE_USER_HOME/caches), which is never written from inside.

Java reads ~ from the password database, not $HOME, so GRADLE_USER_HOME names the test's HOME's .gradle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from registries import REGISTRY_HOST, tree_state
from workload_support import run

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("gradle") is None
                                 or shutil.which("javac") is None, reason="needs bwrap, gradle and a JDK (scripts/setup)")]

# No plugin: a configuration resolved from the repository, and a task that prints what it resolved.
BUILD = """configurations {{ deps }}
repositories {{ maven {{ url "{url}/" }} }}
dependencies {{ deps "test.gtd:greet:1.0" }}
task resolved {{ doLast {{ configurations.deps.files.each {{ println "resolved " + it.name }} }} }}
"""


def gradle(*flags: str) -> str:
    return f'GRADLE_USER_HOME="$HOME/.gradle" gradle --no-daemon -q {" ".join(flags)} resolved'


@pytest.fixture
def maven_repo(file_registry, tmp_path):
    file_registry.add_greet_artifact(tmp_path / "greet-src")
    return file_registry


def project(root: Path, url: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "settings.gradle").write_text("rootProject.name = 'app'\n")
    (root / "build.gradle").write_text(BUILD.format(url=url))


def test_gradle_offline_build_at_readwrite_reads_the_users_cache(sandbox, repo, maven_repo, isolated_home, tmp_path):
    host_project = tmp_path / "host-app"
    project(host_project, maven_repo.url())
    outside = run(None, gradle(), host_project, timeout=300)
    assert outside.returncode == 0 and "resolved greet-1.0.jar\n" in outside.stdout, outside.stdout + outside.stderr
    cache = isolated_home / ".gradle" / "caches"
    before = tree_state(cache)
    assert any(k.endswith("greet-1.0.jar") for k in before)

    project(repo, maven_repo.url())
    session = sandbox(Level.READWRITE)  # the repository is out of reach: only the cache can serve this
    maven_repo.requests.clear()
    inside = run(session, gradle("--offline"), repo, timeout=300)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert "resolved greet-1.0.jar\n" in inside.stdout
    assert maven_repo.requests == [] and session.violations == []
    assert tree_state(cache) == before, "the user's Gradle cache was written from inside the sandbox"


def test_gradle_resolves_at_network_and_leaves_the_users_cache_empty(sandbox, repo, maven_repo, isolated_home):
    project(repo, maven_repo.url(REGISTRY_HOST))
    # Gradle ignores the proxy variables: its direct connection is caught on the repository's port.
    config = GtdConfig.model_validate({"sandbox": {"interceptPorts": [maven_repo.port], "levels": {"network": {
        "allowDomains": [f"{REGISTRY_HOST}:{maven_repo.port}", f"127.0.0.1:{maven_repo.port}"]}}}})
    session = sandbox(Level.NETWORK, config=config)
    inside = run(session, gradle(), repo, timeout=300)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert "resolved greet-1.0.jar\n" in inside.stdout
    assert "/test/gtd/greet/1.0/greet-1.0.jar" in maven_repo.requests
    assert session.violations == []
    assert tree_state(isolated_home / ".gradle" / "caches") == {}


def test_gradle_offline_build_without_a_cache_fails_inside_as_outside(sandbox, repo, maven_repo, tmp_path):
    """The control: the offline build above works only because it reads the user's Gradle cache."""
    host_project = tmp_path / "host-app"
    project(host_project, maven_repo.url())
    project(repo, maven_repo.url())
    outside = run(None, gradle("--offline"), host_project, timeout=300)
    inside = run(sandbox(Level.READWRITE), gradle("--offline"), repo, timeout=300)
    assert outside.returncode != 0 and inside.returncode != 0
    assert "offline mode" in outside.stderr and "offline mode" in inside.stderr, inside.stderr
