"""Create a sandbox's missing writable paths on the host without ever following a symlink.

A writable path the policy names (a provider's state dir, a configured `build/`, the phase's
TODO.md) may be missing when a session starts. Creating it with `mkdir -p`/`touch` would follow a
symlink the agent left in an earlier phase and create the directory or file anywhere. Here every
component below a trusted base is opened with O_NOFOLLOW relative to its parent's descriptor, and
created with mkdirat/openat(O_EXCL): a symlink or non-directory on the way is an error.

The base is the workspace for paths inside it; outside it, the longest existing prefix *resolved*
(a user's own `~/.cache -> /data/cache` is honoured), which the caller checks against the policy.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def _open_dir(base: Path, parts: tuple[str, ...], *, create: bool) -> int:
    fd = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if part in ("", ".", ".."):
                raise UnsafePath(f"refusing path component {part!r}")
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except (NotADirectoryError, OSError) as exc:
                if isinstance(exc, FileNotFoundError):
                    raise
                raise UnsafePath(f"{part} in {base} is a symlink or not a directory") from exc
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dirs(path: Path, base: Path) -> None:
    """mkdir -p `path` below the existing directory `base`, following no symlink below `base`."""
    fd = _open_dir(base, Path(path).relative_to(base).parts, create=True)
    os.close(fd)


def create_empty_file(path: Path, base: Path) -> None:
    """Create `path` as a new empty regular file (its parent must exist below `base`, no symlink)."""
    fd = _open_dir(base, Path(path).parent.relative_to(base).parts, create=False)
    try:
        os.close(os.open(Path(path).name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o666, dir_fd=fd))
    finally:
        os.close(fd)
