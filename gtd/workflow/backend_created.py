"""Entries gtd creates on the host because the sandbox's backend cannot let the agent create them.

Under the Landlock backend the workspace root (and a directory holding a protected path deeper down) takes
no new entries: Landlock grants whole trees and cannot take `.git` back out of one (docs/landlock-backend.md).
A write there that the phase's level allows is refused all the same; gtd creates the entry on the host and
resumes the agent. The escalator settles it as "the config already allows it" (decided_by "saved rule",
which stays true); this module names the real reason, for the summary, the live view and the audit
(`created_by_gtd`, a field of its own, so --json keeps decided_by's meaning).
"""

from __future__ import annotations

from pathlib import Path


def backend_limit(backend: str | None, policy, path: Path, workspace: Path) -> str | None:
    """Why the new entry `path` was refused though `policy` allows it: the backend's limit, or None (the
    policy's refusal, or another cause: the entry exists, its directory takes new entries)."""
    from gtd.workspace_files import UnsafeWorkspacePath, exists

    parent = path.parent
    if backend != "landlock" or not (parent == workspace or any(parent in p.parents for p in policy.protected)):
        return None
    try:
        if exists(workspace, path):
            return None
    except (OSError, UnsafeWorkspacePath):
        return None
    from gtd.sandbox.diagnose.why import why_path

    if not why_path(policy, path).allowed:
        return None
    where = "the workspace root" if parent == workspace else f"{parent}/, which holds a protected path"
    return f"the Landlock backend cannot let the agent add entries to {where}"


def described(entry: dict) -> str:
    """An escalation decision as the summary lists it: `new.py (project, by saved rule)`, or why gtd made it."""
    if entry.get("created_by_gtd"):
        return f"{entry.get('target')} (created by gtd: {entry['created_by_gtd']})"
    return f"{entry.get('target')} ({entry.get('decision')}, by {entry.get('decided_by')})"
