"""Removing a directory tree the agent may have locked: directories made `chmod 0000` or `0111` below it
(a planted repository), or overlayfs's mode-000 work dirs in a cache layer. rmtree can neither list nor
empty them; their owner may give its rwx back first.

That is done top-down relative to directory descriptors, never through a symlink: each directory is
checked (a directory, ours) without following, changed with AT_SYMLINK_NOFOLLOW and opened O_NOFOLLOW, so
a link the agent swapped in meanwhile is neither followed nor changed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: Path) -> None:
    """Remove `path` and everything below it, giving the owner's rwx back where it was taken away (a
    symlink at `path` is removed itself). OSError when something could not be removed."""
    import shutil  # here: only a removal needs it

    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return
    try:
        give_back_owner_rwx(path)
        shutil.rmtree(path)
    except RecursionError as exc:  # both walk the tree recursively: a chain of ~1000 directories the agent made
        raise OSError(f"{path}: directories nested too deep to remove") from exc


def give_back_owner_rwx(path: Path, *, below: bool = True) -> None:
    """The owner's rwx on the directory `path` (and, with `below`, on every directory of ours below it),
    no symlink followed. What cannot be changed (not ours, gone meanwhile) is left as it is: the move or
    rmtree that needed it reports it."""
    path = os.path.abspath(path)
    try:
        parent = os.open(os.path.dirname(path), _DIR & ~os.O_NOFOLLOW)  # the caller's choice of place
    except OSError:
        return
    try:
        top = _unlocked(parent, os.path.basename(path))
    finally:
        os.close(parent)
    if top is not None and below:
        _unlock_below(top)
    elif top is not None:
        os.close(top)


def _unlock_below(fd: int) -> None:
    """Every directory below the open directory `fd` unlocked, depth first; closes fd."""
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        for name in names:
            child = _unlocked(fd, name)
            if child is not None:
                _unlock_below(child)
    finally:
        os.close(fd)


def _unlocked(parent: int, name: str) -> int | None:
    """The directory `name` in `parent` with its owner's rwx given back, opened for listing; None when it
    is not a directory of ours (a symlink included) or cannot be changed or opened."""
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            return None
        if stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
            os.chmod(name, stat.S_IMODE(st.st_mode) | 0o700, dir_fd=parent, follow_symlinks=False)
        return os.open(name, _DIR, dir_fd=parent)
    except (OSError, NotImplementedError):  # NotImplementedError: a libc without fchmodat's NOFOLLOW
        return None
