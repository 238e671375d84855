"""Two terminals, two live escalations answered at the same moment: both rules land in the same file."""

from __future__ import annotations

import contextlib
import json

import pytest
import tomlkit

from escalation_support import finish
from gtd.paths import user_config_file
from support import git, serving

pytestmark = pytest.mark.bwrap


@pytest.fixture
def two_registries():
    """Two loopback servers; the user config allows their IP literals (comment kept), not their names."""
    with contextlib.ExitStack() as servers:
        ports = [servers.enter_context(serving(b"REGISTRY-OK")) for _ in range(2)]
        path = user_config_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        allowed = ", ".join(f'"127.0.0.1:{port}"' for port in ports)
        path.write_text(f"# my settings\n[sandbox.levels.readwrite]\nallowDomains = [{allowed}]\n")
        yield [f"localhost:{port}" for port in ports]


def _both_asking(spawn_gtd, repo, targets):
    children = []
    for target in targets:
        child = spawn_gtd("sandbox", "run", "--level", "readwrite", "--", "curl", "--noproxy", "", "-sS", "--max-time", "60",
                          f"http://{target}/", cwd=repo)
        children.append(child)
    for child, target in zip(children, targets):
        child.expect(f"connect to {target}")
        child.expect("Decision \\[o/p/u/d\\]")
    return children


def _answer_both(children, answer):
    for child in children:  # both answers go out before either process has saved
        child.sendline(answer)
    for child in children:
        output, status = finish(child)
        assert status == 0 and "REGISTRY-OK" in output, output


def test_two_terminals_saving_to_the_project_at_once(repo, spawn_gtd, two_registries):
    children = _both_asking(spawn_gtd, repo, two_registries)
    _answer_both(children, "p")
    allowed = json.loads((repo / ".gtdrc.json").read_text())["sandbox"]["levels"]["readwrite"]["allowDomains"]
    assert sorted(allowed) == sorted(two_registries)
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert sorted(s for s in subjects if s.startswith("🔐")) == sorted(
        f"🔐 gtd: allow {t} at readwrite (approved by user)" for t in two_registries)
    assert git(repo, "status", "--porcelain").strip() == ""


def test_two_terminals_saving_to_the_user_config_at_once(repo, spawn_gtd, two_registries):
    children = _both_asking(spawn_gtd, repo, two_registries)
    _answer_both(children, "u")
    text = user_config_file().read_text()
    assert text.startswith("# my settings\n")
    allowed = tomlkit.parse(text).unwrap()["sandbox"]["levels"]["readwrite"]["allowDomains"]
    assert sorted(allowed[2:]) == sorted(two_registries) and len(allowed) == 4
