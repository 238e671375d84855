"""Fixtures for sandbox tests: a fake HOME, temp git repos, a sandbox session factory, a loopback HTTP server.

Nothing here touches the real HOME: every test runs with HOME (and XDG dirs) inside tmp_path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_support import git
from support import sandboxes, serving

@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(var, raising=False)
    (h / ".gitconfig").write_text("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    return h


@pytest.fixture
def repo(tmp_path, home) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git("init", "-q", cwd=r)
    (r / "README.md").write_text("hello\n")
    git("add", "README.md", cwd=r)
    git("commit", "-qm", "init", cwd=r)
    return r


@pytest.fixture
def sandbox(repo, home):
    """Factory: sandbox(level=..., config=..., needs=..., **session kwargs) -> started session (closed after the test)."""
    with sandboxes(repo, home) as make:
        yield make


@pytest.fixture
def http_server():
    """A loopback HTTP server standing in for a package registry: yields its port."""
    with serving(b"PACKAGE-CONTENTS-" + b"x" * 1000) as port:
        yield port
