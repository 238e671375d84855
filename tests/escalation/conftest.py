"""Fixtures for driving the real `gtd` prompt through a pseudo-terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

from support import serving


@pytest.fixture
def http_server():
    """A loopback HTTP server standing in for a package registry (every GET answers REGISTRY-OK): yields its port."""
    with serving(b"REGISTRY-OK") as port:
        yield port


@pytest.fixture
def spawn_gtd(isolated_home):
    """spawn_gtd(*args, cwd=...) -> a pexpect child running the real gtd in a terminal (plain output)."""
    children: list[pexpect.spawn] = []

    def spawn(*args: str, cwd: Path, timeout: float = 60) -> pexpect.spawn:
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "TERM": "xterm"}
        child = pexpect.spawn(sys.executable, ["-m", "gtd", *args], cwd=str(cwd), env=env, encoding="utf-8",
                              timeout=timeout, dimensions=(50, 200))
        children.append(child)
        return child

    yield spawn
    for child in children:
        if child.isalive():
            child.terminate(force=True)
