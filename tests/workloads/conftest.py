"""Fixtures for workload tests: real package managers, inside the real sandbox and outside, against
local registries the tests start. HOME and the XDG dirs are the suite's temp ones (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy import build_policy
from gtd.sandbox.session import open_sandbox
from registries import REGISTRY_HOST, LocalRegistry, resolver


@pytest.fixture(autouse=True)
def hermetic_tools(monkeypatch, isolated_home):
    """The machine's own pip/npm settings (find-links, mirrors, constraints) stay out of the tests."""
    for key in list(os.environ):
        if key.startswith(("PIP_", "UV_", "npm_config_", "NPM_CONFIG_", "YARN_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("npm_config_update_notifier", "false")
    monkeypatch.setenv("npm_config_fund", "false")
    monkeypatch.setenv("npm_config_audit", "false")


@pytest.fixture
def registry(tmp_path):
    reg = LocalRegistry(tmp_path / "registry")
    yield reg
    reg.close()


@pytest.fixture
def sandbox(repo, isolated_home):
    """Factory: sandbox(level, config=...) -> a started session whose proxy resolves `registry.test`."""
    opened = []

    def make(level: Level, *, config: GtdConfig | None = None, **kw):
        policy = build_policy(config or GtdConfig(), workspace=repo, level=level, home=isolated_home)
        kw.setdefault("resolver", resolver)
        session = open_sandbox(policy, **kw)
        opened.append(session)
        return session

    yield make
    for s in opened:
        s.close()


def allow_registry(port: int, level: str = "network", *, name: bool = True) -> GtdConfig:
    """Config that lets `registry.test` (a loopback address in the tests) through at a level. The proxy
    refuses names resolving to loopback unless the address itself is allowed too, so that is always in;
    `name=False` leaves the name out (it must then come from the user's registry settings)."""
    allow = [f"127.0.0.1:{port}"] + ([f"{REGISTRY_HOST}:{port}"] if name else [])
    return GtdConfig.model_validate({"sandbox": {"levels": {level: {"allowDomains": allow}}}})


def run(session, script: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    """A shell script inside the sandbox (session) or on the host (session=None), text output."""
    if session is None:
        return subprocess.run(["/bin/sh", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    r = session.run(["/bin/sh", "-c", script], cwd=cwd, timeout=timeout)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))
