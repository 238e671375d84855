"""Fixtures for driving the real `gtd` prompt through a pseudo-terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

from support import serving, spawn_in_terminal


@pytest.fixture
def http_server():
    """A loopback HTTP server standing in for a package registry (every GET answers REGISTRY-OK): yields its port."""
    with serving(b"REGISTRY-OK") as port:
        yield port


@pytest.fixture
def registry(http_server):
    """The user config lists the loopback server's IP literal (loopback needs that), not its name:
    whether the name is reachable is what the tests decide. Returns the name as host:port."""
    from gtd.paths import user_config_file

    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'# loopback needs its IP literal listed\n[sandbox.levels.readwrite]\nallowDomains = ["127.0.0.1:{http_server}"]\n')
    return f"localhost:{http_server}"


@pytest.fixture
def spawn_gtd(isolated_home):
    """spawn_gtd(*args, cwd=...) -> a pexpect child running the real gtd in a terminal (plain output)."""
    children: list[pexpect.spawn] = []

    def spawn(*args: str, cwd: Path, timeout: float = 60) -> pexpect.spawn:
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "TERM": "xterm"}
        child = spawn_in_terminal(sys.executable, ["-m", "gtd", *args], cwd=str(cwd), env=env, encoding="utf-8",
                                  timeout=timeout, dimensions=(50, 200))
        children.append(child)
        return child

    yield spawn
    for child in children:
        if child.isalive():
            child.terminate(force=True)
