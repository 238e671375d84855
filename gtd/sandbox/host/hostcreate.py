"""Create a sandbox's missing writable paths on the host without ever following a symlink.

A writable path the policy names (a provider's state dir, a configured `build/`, the phase's
TODO.md) may be missing when a session starts. Creating it with `mkdir -p`/`touch` would follow a
symlink the agent left in an earlier phase and create the directory or file anywhere. The walk
itself is workspace_files' (every component below a trusted base opened O_NOFOLLOW from its
parent's descriptor, created with mkdirat/openat(O_EXCL)); this module only picks the base and
speaks OSError, which is what the session expects of a path it cannot prepare.

The base is the workspace for paths inside it; outside it, the longest existing prefix *resolved*
(a user's own `~/.cache -> /data/cache` is honoured), which the caller checks against the policy.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd import workspace_files


class UnsafePath(OSError):
    """A component of the path is a symlink or not a directory."""


def existing_prefix(path: Path) -> tuple[Path, tuple[str, ...]]:
    """(the longest existing prefix of path, the missing parts after it)."""
    missing: list[str] = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p.name)
        p = p.parent
    return p, tuple(reversed(missing))


def make_dirs(path: Path, base: Path) -> None:
    """mkdir -p `path` below the existing directory `base`, following no symlink below `base`."""
    try:
        workspace_files.make_dirs(base, path)
    except workspace_files.UnsafeWorkspacePath as exc:
        raise UnsafePath(str(exc)) from None


def create_empty_file(path: Path, base: Path) -> None:
    """Create `path` as a new empty regular file (its parent must exist below `base`, no symlink);
    something already there is FileExistsError: only a file gtd made is gtd's to remove later."""
    try:
        workspace_files.create_file(base, path, exclusive=True)
    except workspace_files.UnsafeWorkspacePath as exc:
        raise UnsafePath(str(exc)) from None


def make_placeholder_parents(parents, registry) -> None:
    """Create the missing parent directories of protected paths outside the workspace (a writable
    HOME without ~/.config: linux/writable_roots.placeholder_parents), so their read-only placeholders land on the
    protected paths themselves and `mkdir -p ~/.config/tool` still works inside the sandbox. Each
    directory is recorded in the session registry *before* it is made: the last session removes it
    again when it is still empty (a tool inside may have filled it: then it stays, as the tool's).
    When a parent cannot be made safely, nothing is made: the placeholder then sits on the first
    missing component as before, still protected, only less convenient."""
    for protected, first_missing in parents:
        base = first_missing.parent
        try:
            if os.path.realpath(base) != str(base):
                continue  # changed since it was checked
        except OSError:
            continue  # no longer resolvable by gtd: made nothing
        registry.add(parents=[d for d in protected.parents if d == first_missing or first_missing in d.parents])
        try:
            make_dirs(protected.parent, base)
        except OSError:
            pass
