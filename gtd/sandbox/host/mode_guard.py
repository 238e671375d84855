"""File modes of the work tree's protected paths, recorded at start and put back at the end (Landlock backend).

Landlock refuses writes but not metadata: a sandboxed process may chmod any file its user owns, so
`chmod +x .git/hooks/pre-commit` (a hook the person had disabled) would arm it for their next `git commit`.
Set-id bits stay refused (seccomp); other mode changes to protected paths in the workspace are undone once
every sandboxed process is gone, and reported. Walked with lstat only; git's object store, logs and LFS
content are skipped (their modes arm nothing), and at most MAX_ENTRIES are recorded.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_ENTRIES = 20000
SKIPPED = frozenset(("objects", "logs", "lfs"))  # inside a git dir


def record_modes(paths: list[Path]) -> dict[str, tuple[int, int, int]]:
    """path -> (st_dev, st_ino, permission bits) for each protected path and what is below it."""
    found: dict[str, tuple[int, int, int]] = {}
    stack = [str(p) for p in paths]
    while stack and len(found) < MAX_ENTRIES:
        path = stack.pop()
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        found[path] = (st.st_dev, st.st_ino, stat.S_IMODE(st.st_mode))
        if stat.S_ISDIR(st.st_mode):
            try:
                names = os.listdir(path)
            except OSError:
                continue
            stack += [os.path.join(path, n) for n in names if n not in SKIPPED]
    return found


def put_back(recorded: dict[str, tuple[int, int, int]]) -> list[tuple[Path, str]]:
    """chmod back every recorded path that is still the same file with other permission bits."""
    done = []
    for path, (dev, ino, mode) in recorded.items():
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) != (dev, ino) or stat.S_ISLNK(st.st_mode) or stat.S_IMODE(st.st_mode) == mode:
            continue
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) == (dev, ino):
                    os.chmod(f"/proc/self/fd/{fd}", mode)
            finally:
                os.close(fd)
            done.append((Path(path), f"mode changed in the sandbox ({oct(stat.S_IMODE(st.st_mode))}); put back to {oct(mode)}"))
        except OSError as exc:
            done.append((Path(path), f"mode changed in the sandbox; COULD NOT put it back ({exc})"))
    return done
