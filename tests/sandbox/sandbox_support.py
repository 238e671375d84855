"""Helpers shared by the sandbox tests (imported by name: tests/sandbox is on sys.path)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

requires_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
PY = sys.executable


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def sh(session, script: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    r = session.run(["/bin/sh", "-c", script], cwd=cwd, timeout=timeout)
    r.out = r.stdout.decode(errors="replace")
    r.err = r.stderr.decode(errors="replace")
    return r


def py(session, code: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    r = session.run([PY, "-c", code], cwd=cwd, timeout=timeout)
    r.out = r.stdout.decode(errors="replace")
    r.err = r.stderr.decode(errors="replace")
    return r


