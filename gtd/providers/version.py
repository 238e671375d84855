"""Asking a CLI for its version, for `gtd doctor` (bounded: a broken install must not hang doctor)."""

from __future__ import annotations

import re
import subprocess


def cli_version(executable: str, *args: str) -> str | None:
    try:
        done = subprocess.run([executable, *(args or ("--version",))], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\d+\.\d+\.\d+[\w.+-]*", done.stdout + done.stderr)
    return match.group(0) if match else None
