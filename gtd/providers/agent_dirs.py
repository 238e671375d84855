"""The gtd-managed config/state directory each agent CLI runs with.

Each CLI is pointed (CLAUDE_CONFIG_DIR, PI_CODING_AGENT_DIR, XDG_* for opencode) at its own
directory under gtd's data dir, never the user's own one: the agent may write its sessions
there, but the files that grant it powers (settings, hooks, plugins, extensions) are written
by gtd on the host before every run and are read-only inside the sandbox. Whatever an agent
plants in its config can therefore neither outlive the run nor reach the user's own CLI.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gtd.paths import agents_dir


def agent_dir(cli: str) -> Path:
    """Where CLI `cli` keeps its state when run by gtd (outside gtd's protected config/state)."""
    return agents_dir() / cli


def write_json(path: Path, data: object) -> None:
    """Replace a config file atomically (gtd writes it before each run; the agent only reads it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        raise OSError(f"{path} is a directory, expected a config file")
    import tempfile  # here: `gtd sandbox run` asks only for the provider's needs, which write nothing

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)  # a planted symlink is replaced, never written through
