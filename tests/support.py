"""Helpers for tests (importable as `support` thanks to pytest's pythonpath setting)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def run_gtd(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real `gtd` entry point in a subprocess (stdin closed: a headless run)."""
    return subprocess.run([sys.executable, "-m", "gtd", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})}, timeout=timeout)


def explain(result: subprocess.CompletedProcess) -> str:
    """A failed gtd run's exit status and output tails, for assertion messages."""
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-4000:]}"
