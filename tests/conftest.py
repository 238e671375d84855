"""Shared fixtures. Every test runs with its own HOME and XDG dirs: the real user config,
state and agent settings are never read or written by the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import git

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    real_home = os.environ.get("HOME", "")
    if "PYENV_ROOT" not in os.environ and Path(real_home, ".pyenv").is_dir():
        monkeypatch.setenv("PYENV_ROOT", str(Path(real_home, ".pyenv")))  # keep pyenv shims working
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_STATE_HOME", ".local/state"),
                     ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(var, str(home / sub))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GTD_PROVIDER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GTD_DEMO_SCRIPT", "1")  # the scripted provider's built-in script runs outside `gtd demo`
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Person")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "person@example.test")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Person")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "person@example.test")
    return home


@pytest.fixture
def repo(tmp_path) -> Path:
    """A fresh git repository with one commit."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# project\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial commit")
    return root
