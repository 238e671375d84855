"""Protected names (docs/protected-paths.md), tried for real inside bwrap: an existing one cannot be
changed (EROFS), a missing one created by the agent is quarantined when the session ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.protected import AGENT_CONFIG_NAMES, HOME_PROTECTED_NAMES, HOOK_MANAGER_NAMES, REPO_PROTECTED_NAMES

from sandbox_support import git, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]

REPO_GROUPS = {
    "hook managers": HOOK_MANAGER_NAMES,
    "agent configs": AGENT_CONFIG_NAMES,
    "shell, editor, git": tuple(n for n in REPO_PROTECTED_NAMES if n not in HOOK_MANAGER_NAMES + AGENT_CONFIG_NAMES
                                and n != ".gtdrc.json"),
}
WRITABLE_HOME = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"writablePaths": ["~"]}}}})


def _plant_script(root: Path, names) -> str:
    """Create each name (as a file, or a file inside it when it already is a directory)."""
    lines = []
    for name in names:
        p = root / name
        lines.append(f"mkdir -p '{p.parent}' 2>/dev/null; if [ -d '{p}' ]; then echo x > '{p}/planted'; "
                     f"else echo x > '{p}'; fi")
    return "\n".join(lines)


def _existing(root: Path, names) -> None:
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("orig\n")


def _unchanged(root: Path, names) -> list[str]:
    return [name for name in names if (root / name).read_text() != "orig\n"]


@pytest.mark.parametrize("group", list(REPO_GROUPS))
def test_existing_repo_names_cannot_be_changed(sandbox, repo, group):
    names = REPO_GROUPS[group]
    _existing(repo, names)
    s = sandbox(Level.READWRITE)
    r = sh(s, _plant_script(repo, names), repo)
    assert "Read-only file system" in r.err
    assert _unchanged(repo, names) == []


@pytest.mark.parametrize("group", list(REPO_GROUPS))
def test_missing_repo_names_created_by_the_agent_are_quarantined(sandbox, repo, group):
    names = REPO_GROUPS[group]
    s = sandbox(Level.READWRITE)
    sh(s, _plant_script(repo, names) + "\necho work > work.py", repo)
    s.close()
    assert [n for n in names if (repo / n).exists()] == []
    quarantined = {v.target for v in s.violations if "quarantined" in v.detail}
    expected = {str(repo / n) for n in names}
    assert expected <= quarantined, expected - quarantined
    assert (repo / "work.py").read_text() == "work\n"  # ordinary work stays


@pytest.mark.parametrize("existing", [True, False], ids=["existing", "missing"])
def test_home_startup_files_are_protected_when_home_is_writable(sandbox, repo, home, existing, monkeypatch):
    tools = home / "tools/bin"  # a directory on the host's PATH below HOME
    monkeypatch.setenv("PATH", f"{tools}:{__import__('os').environ['PATH']}")
    names = tuple(n for n in HOME_PROTECTED_NAMES if n not in (".gitconfig", ".git")) + ("tools/bin",)
    if existing:
        _existing(home, names)
    s = sandbox(Level.READWRITE, config=WRITABLE_HOME)
    r = sh(s, _plant_script(home, names) + f"\necho ok > {home}/notes.txt", repo)
    if existing:
        assert "Read-only file system" in r.err
        assert _unchanged(home, names) == []
    s.close()
    if not existing:
        assert [n for n in names if (home / n).exists()] == []
    assert (home / "notes.txt").read_text() == "ok\n"  # HOME itself is writable as configured


def test_a_repository_at_home_is_protected(sandbox, repo, home):
    git("init", "-q", cwd=home)
    s = sandbox(Level.READWRITE, config=WRITABLE_HOME)
    r = sh(s, f"echo 'echo pwned' > {home}/.git/hooks/pre-commit; echo x >> {home}/.git/config;"
              f" mv {home}/.git {home}/g2", repo)
    assert r.err.count("Read-only file system") >= 2, r.err
    assert not (home / ".git/hooks/pre-commit").exists() and (home / ".git").is_dir()


def test_workspace_at_home_protects_startup_files(sandbox, home):
    git("init", "-q", cwd=home)
    (home / ".bashrc").write_text("orig\n")
    s = sandbox(Level.READWRITE, workspace=home)
    r = sh(s, "echo evil >> .bashrc; echo evil > .bash_aliases; mkdir -p bin && echo evil > bin/ls; echo ok > f", home)
    assert "Read-only file system" in r.err
    s.close()
    assert (home / ".bashrc").read_text() == "orig\n"
    assert not (home / ".bash_aliases").exists() and not (home / "bin").exists()
    assert (home / "f").read_text() == "ok\n"
