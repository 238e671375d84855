"""Fixtures for provider tests: a direct launcher (no sandbox) and helpers to write scripts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level, Phase
from agents import SETUPS, point_at, require_cli
from provider_support import DirectLauncher

from fakemodel.plugin import fake_model  # noqa: F401  (the lead may add pytest_plugins = ["fakemodel.plugin"] to tests/conftest.py instead)


@pytest.fixture
def launcher():
    direct = DirectLauncher()
    yield direct
    for proc in direct.started:  # never leave anything behind, whatever the test did
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def uncommitted_repo(tmp_path) -> Path:
    """A git work tree with a README.md and no commit yet, as the agent e2e tests use (the root
    conftest's `repo` has a commit on main)."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "README.md").write_text("# project\n")
    return root


@pytest.fixture
def workdir(tmp_path) -> Path:
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture
def write_script(tmp_path):
    def write(data: dict, name: str = "script.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(data))
        return path

    return write


@pytest.fixture
def sandbox_session(tmp_path, isolated_home):
    """Factory for a real sandbox session (bwrap) over a workspace, closed after the test."""
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    opened = []

    def make(workspace: Path, *, level: Level = Level.READWRITE, phase: Phase | None = None, needs=None,
             config: GtdConfig | None = None):
        policy = build_policy(config or GtdConfig(), workspace=workspace, level=level, phase=phase, needs=needs,
                              home=isolated_home)
        session = open_sandbox(policy)
        opened.append(session)
        return session

    yield make
    for session in opened:
        session.close()


@pytest.fixture(params=sorted(SETUPS))
def agent(request, monkeypatch, fake_model):
    """Each real agent CLI in turn, pointed at the suite's fake model server."""
    setup = SETUPS[request.param]
    require_cli(setup.name, monkeypatch)
    point_at(fake_model, monkeypatch)
    return setup


@pytest.fixture
def claude_agent(monkeypatch, fake_model):
    """The real claude CLI alone, pointed at the suite's fake model server (its subscription login tests)."""
    setup = SETUPS["claude"]
    require_cli(setup.name, monkeypatch)
    point_at(fake_model, monkeypatch)
    return setup
