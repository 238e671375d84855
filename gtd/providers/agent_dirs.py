"""The gtd-managed config/state directory each agent CLI runs with.

Each CLI is pointed (CLAUDE_CONFIG_DIR, PI_CODING_AGENT_DIR, XDG_* for opencode) at its own
directory under gtd's data dir, never the user's own one: the agent may write its sessions
there, but the files that grant it powers (settings, hooks, plugins, extensions) are written
by gtd on the host before every run and are read-only inside the sandbox. Whatever an agent
plants in its config can therefore neither outlive the run nor reach the user's own CLI.

Each project has its own (issue 23), keyed like gtd's per-project state dir (paths.project_key): what
one project's agent wrote there (transcripts, a memory file) is neither read by another project's
sandbox nor sent with another project's requests. Dirs of the earlier layout (one per CLI, shared by
every project) are left as they were and no longer used (docs/home-allow-list.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gtd.paths import agents_dir


def agents_root() -> Path:
    """Where every agent dir gtd manages lives (outside gtd's protected config/state)."""
    return agents_dir()


def agent_dir(cli: str, workspace: Path | None = None) -> Path:
    """Where CLI `cli` keeps its state when run by gtd for the project at `workspace` (without one: the
    dir of no project, for a provider that never learns its workspace)."""
    if workspace is None:
        return agents_root() / cli
    from gtd.paths import project_key

    return agents_root() / project_key(Path(workspace)) / cli


class AgentDirs:
    """A provider's agent dir: the one it was given, else its project's, pinned by the first workspace the
    provider is asked about (its sandbox needs, or its first command), so the dir the sandbox makes writable
    is the dir the CLI is pointed at."""

    def __init__(self, cli: str, fixed: Path | None = None):
        self.cli = cli
        self.fixed = fixed
        self._pinned: Path | None = fixed

    @property
    def path(self) -> Path:
        return self._pinned or agent_dir(self.cli)

    def use(self, workspace: Path | None) -> Path:
        """The dir, pinned now if it was not yet (to `workspace`'s project; to no project without one)."""
        if self._pinned is None:
            self._pinned = agent_dir(self.cli, workspace)
        return self._pinned

    def reviewer(self) -> "AgentDirs":
        """The reviewer's own dir beside this one (it may run while the agent does): in the same project."""
        if self._pinned is not None:
            return AgentDirs(self.cli + "-reviewer", self._pinned.with_name(self._pinned.name + "-reviewer"))
        return AgentDirs(self.cli + "-reviewer")


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
