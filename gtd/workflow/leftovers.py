"""The agent's unfinished work: what a stopped phase left uncommitted in the work tree.

gtd only commits finished steps. When a phase stops early (tests still red, an escalation
pending, Ctrl-C) the agent's changes stay in the work tree for the person to inspect. They
must not then be mistaken for the person's own edits: gtd remembers the exact tree it left
behind, and as long as nobody touched it the next run simply carries on with it.
"""

from __future__ import annotations

import json
from pathlib import Path

from gtd.paths import project_state_dir
from gtd.workflow import git

MARKER = "agent-leftovers.json"


def _marker(repo: Path) -> Path:
    return project_state_dir(repo) / MARKER


def worktree_tree(repo: Path) -> str:
    """The git tree id of the whole work tree as it is now (untracked files included), via a
    throw-away index so the real index is left alone."""
    with git.temporary_index() as env:
        if git.has_commits(repo):
            git.git(repo, "read-tree", "HEAD", env=env)
        git.git(repo, "add", "-A", env=env)
        return git.git(repo, "write-tree", env=env).strip()


def remember(repo: Path, phase: str, reason: str) -> bool:
    """After a phase stopped early: note the agent's uncommitted changes. Returns whether there were any."""
    if not git.changes(repo):
        forget(repo)
        return False
    from gtd.config.writer import atomic_write  # here: `gtd status` reads the marker, never writes it

    head = git.git(repo, "rev-parse", "HEAD", check=False).strip()
    atomic_write(_marker(repo), json.dumps({"head": head, "tree": worktree_tree(repo), "phase": phase,
                                            "reason": reason}) + "\n")
    return True


def untouched(repo: Path, *, forget_stale: bool = True) -> bool:
    """True when the uncommitted changes are exactly what a stopped phase left (nobody edited since)."""
    path = _marker(repo)
    if not path.exists():
        return False
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    head = git.git(repo, "rev-parse", "HEAD", check=False).strip()
    if marker.get("head") == head and marker.get("tree") == worktree_tree(repo):
        return True
    if forget_stale:
        forget(repo)  # HEAD moved or the person edited: from now on the changes are theirs
    return False


def forget(repo: Path) -> None:
    path = _marker(repo)
    if path.exists():
        path.unlink()
