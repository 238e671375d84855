"""Real Maven inside the sandbox and outside, against a Maven repository the test serves on loopback
(named as a mirror in the person's ~/.m2/settings.xml, as a company Nexus would be): `mvn compile` at
network downloads the project's dependency and the build's plugins as outside, `mvn -o compile` at
readwrite builds from the user's local repository (~/.m2/repository), which is never written from inside.

The plugins (maven-resources-plugin, maven-compiler-plugin and what they need) come from Debian's
packaged Maven repository, /usr/share/maven-repo, served by the same test server: nothing is fetched
from Maven Central. Java reads ~ from the password database, not $HOME, so every run passes the test's
HOME as `user.home` (MAVEN_OPTS)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from registries import REGISTRY_HOST, tree_state
from workload_support import run

DEBIAN_MAVEN_REPO = Path("/usr/share/maven-repo")
PLUGINS = [("maven-resources-plugin", "3.3.0"), ("maven-compiler-plugin", "3.10.1")]

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("mvn") is None
                                 or shutil.which("javac") is None, reason="needs bwrap, maven and a JDK (scripts/setup)"),
              pytest.mark.skipif(not all((DEBIAN_MAVEN_REPO / "org/apache/maven/plugins" / a / v).is_dir() for a, v in PLUGINS),
                                 reason="Debian's Maven plugins are not installed (scripts/setup installs them)")]

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>test</groupId><artifactId>app</artifactId><version>0</version>
<properties><maven.compiler.release>17</maven.compiler.release><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
<dependencies><dependency><groupId>test.gtd</groupId><artifactId>greet</artifactId><version>1.0</version></dependency></dependencies>
<build><plugins>{plugins}</plugins></build></project>
""".format(plugins="".join(f"<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>{a}</artifactId>"
                           f"<version>{v}</version></plugin>" for a, v in PLUGINS))
APP = 'public class App { public static void main(String[] a) { System.out.println(gtd.Greet.hello("sandbox")); } }\n'
JAR = "test/gtd/greet/1.0/greet-1.0.jar"


def mvn(*flags: str, local: str = "$HOME/.m2/repository") -> str:
    return (f'MAVEN_OPTS="-Duser.home=$HOME" mvn -B -q {" ".join(flags)} compile'
            f" && java -cp target/classes:{local}/{JAR} App")


@pytest.fixture
def maven_repo(file_registry, tmp_path):
    """The test's repository: the dependency test.gtd:greet:1.0 (compiled here), and Debian's plugins."""
    file_registry.add_greet_artifact(tmp_path / "greet-src")
    file_registry.also_serve(DEBIAN_MAVEN_REPO)
    return file_registry


def use_mirror(home: Path, url: str, local_repository: str = "") -> None:
    settings = home / ".m2" / "settings.xml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    local = f"<localRepository>{local_repository}</localRepository>" if local_repository else ""
    settings.write_text(f"<settings>{local}<mirrors><mirror><id>company</id><mirrorOf>*</mirrorOf><url>{url}/</url>"
                        f"</mirror></mirrors></settings>\n")


def project(root: Path) -> None:
    (root / "src" / "main" / "java").mkdir(parents=True, exist_ok=True)
    (root / "pom.xml").write_text(POM)
    (root / "src" / "main" / "java" / "App.java").write_text(APP)


def test_maven_offline_build_at_readwrite_reads_the_users_local_repository(sandbox, repo, maven_repo, isolated_home, tmp_path):
    use_mirror(isolated_home, maven_repo.url())
    host_project = tmp_path / "host-app"
    project(host_project)
    outside = run(None, mvn(), host_project, timeout=300)
    assert outside.returncode == 0 and outside.stdout.endswith("hello sandbox\n"), outside.stdout + outside.stderr
    local = isolated_home / ".m2" / "repository"
    before = tree_state(local)
    assert JAR in before

    project(repo)
    session = sandbox(Level.READWRITE)  # the repository is out of reach: only the local repository can serve this
    maven_repo.requests.clear()
    inside = run(session, mvn("-o"), repo, timeout=300)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.endswith("hello sandbox\n")
    assert maven_repo.requests == [] and session.violations == []
    assert tree_state(local) == before, "the user's ~/.m2/repository was written from inside the sandbox"


def test_maven_downloads_at_network_from_the_users_mirror_and_leaves_their_repository_empty(sandbox, repo, maven_repo, isolated_home):
    use_mirror(isolated_home, maven_repo.url(REGISTRY_HOST))
    project(repo)
    # Maven ignores the proxy variables: its direct connection is caught on the repository's port. The
    # host comes from the person's settings.xml (allowed at network without a rule naming it); the
    # loopback address it resolves to in this test must be allowed too.
    config = GtdConfig.model_validate({"sandbox": {"interceptPorts": [maven_repo.port], "levels": {"network": {
        "allowDomains": [f"127.0.0.1:{maven_repo.port}"]}}}})
    session = sandbox(Level.NETWORK, config=config)
    inside = run(session, mvn(), repo, timeout=300)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.endswith("hello sandbox\n")
    assert "/test/gtd/greet/1.0/greet-1.0.jar" in maven_repo.requests
    assert session.violations == []
    assert tree_state(isolated_home / ".m2" / "repository") == {}


def test_maven_offline_build_without_a_local_repository_fails_inside_as_outside(sandbox, repo, maven_repo, isolated_home, tmp_path):
    """The control: the offline build above works only because it reads the user's local repository."""
    use_mirror(isolated_home, maven_repo.url())
    host_project = tmp_path / "host-app"
    project(host_project)
    project(repo)
    outside = run(None, mvn("-o"), host_project, timeout=300)
    inside = run(sandbox(Level.READWRITE), mvn("-o"), repo, timeout=300)
    assert outside.returncode != 0 and inside.returncode != 0
    assert "offline mode" in outside.stdout and "offline mode" in inside.stdout, inside.stdout


def test_maven_local_repository_moved_in_settings_xml_is_the_one_read_and_kept_unwritten(sandbox, repo, maven_repo, isolated_home, tmp_path):
    """<localRepository> in ~/.m2/settings.xml moves the cache: gtd overlays that one, not ~/.m2/repository."""
    use_mirror(isolated_home, maven_repo.url(), "${user.home}/m2-local")
    host_project = tmp_path / "host-app"
    project(host_project)
    outside = run(None, mvn(local="$HOME/m2-local"), host_project, timeout=300)
    assert outside.returncode == 0 and outside.stdout.endswith("hello sandbox\n"), outside.stdout + outside.stderr
    local = isolated_home / "m2-local"
    before = tree_state(local)
    assert JAR in before

    project(repo)
    session = sandbox(Level.READWRITE)
    assert local in [c.path for c in session.policy.caches]
    inside = run(session, mvn("-o", local="$HOME/m2-local"), repo, timeout=300)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.endswith("hello sandbox\n") and session.violations == []
    assert tree_state(local) == before
