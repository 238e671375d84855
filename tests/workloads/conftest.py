"""Fixtures for workload tests: real package managers, inside the real sandbox and outside, against
local registries the tests start. HOME and the XDG dirs are the suite's temp ones (tests/conftest.py)."""

from __future__ import annotations

import os

import pytest

from registries import LocalRegistry, resolver
from support import sandboxes


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
def npm_registry(registry):
    """The registry serving one npm package, gtd-shout 1.0.0 (test modules needing more define their own)."""
    registry.add_npm_package("gtd-shout", "1.0.0", "module.exports = s => s.toUpperCase();\n")
    return registry


@pytest.fixture
def index(registry):
    """The registry's simple index serving a wheel (gtdwheel) and an sdist the installer must build (gtdsdist)."""
    registry.add_wheel("gtdwheel", "1.0", "VALUE = 'from-wheel'\n")
    registry.add_sdist("gtdsdist", "1.0", "VALUE = 'built-from-sdist'\n")
    return registry


@pytest.fixture
def sandbox(repo, isolated_home):
    """Factory: sandbox(level, config=...) -> a started session whose proxy resolves `registry.test`."""
    with sandboxes(repo, isolated_home, resolver=resolver) as make:
        yield make


@pytest.fixture
def file_registry(tmp_path):
    """A static file registry (GOPROXY, cargo sparse index, Maven repository) on loopback."""
    from registries import FileRegistry

    reg = FileRegistry(tmp_path / "file-registry")
    yield reg
    reg.close()
