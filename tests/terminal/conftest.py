"""Fixtures for reading what gtd puts on a real terminal (a pseudo-terminal driven by pexpect)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import Screen, serving


@pytest.fixture
def terminal(isolated_home):
    """terminal(*args, cwd=..., env=...) -> support.Screen running the real `gtd` on a pty."""
    screens: list[Screen] = []

    def spawn(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> Screen:
        screens.append(Screen(*args, cwd=cwd, env=env, timeout=timeout))
        return screens[-1]

    yield spawn
    for screen in screens:
        screen.stop()


@pytest.fixture
def registry_port():
    """A stand-in package registry on loopback, every GET answering REGISTRY-OK: yields its port."""
    with serving(b"REGISTRY-OK") as port:
        yield port
