"""The code the last green full test run tested, so a new plan's baseline run is not repeated on it.

Before a plan's first build step gtd runs the tests once on their own (the baseline). When the code is
exactly what a green full run already tested, that run says all the baseline would: gtd records the
tree of each green full run (the work tree by content, gtd's own workflow files TODO.md and AGENTS.md
left out) with its test command in its state dir, out of the agent's reach, and skips the baseline
when both match.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from gtd.paths import project_state_dir
from gtd.workflow.plan import AGENTS_FILE
from gtd.workflow.todo import TODO_FILE

RECORD = "green-tests.json"
GTD_FILES = (TODO_FILE, AGENTS_FILE)  # gtd writes them; the code under test is the rest


def _path(repo: Path) -> Path:
    return project_state_dir(repo) / RECORD


def code_tree(repo: Path) -> str:
    from gtd.workflow.leftovers import worktree_tree

    return worktree_tree(repo, leave_out=GTD_FILES)


def record(repo: Path, command: str) -> None:
    """A full run of `command` just passed on the work tree as it is now."""
    from gtd.workflow.leftovers import write_state

    write_state(_path(repo), json.dumps({"tree": code_tree(repo), "command": command, "time": time.time()}) + "\n")


def last_green(repo: Path, command: str) -> dict | None:
    """The record of the last green run when it ran `command` on exactly the code there is now, else None."""
    try:
        data = json.loads(_path(repo).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("command") != command or data.get("tree") != code_tree(repo):
        return None
    return data
