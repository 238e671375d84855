"""FIFOs, sockets and device nodes in the work tree, moved out of it before host git runs.

git opens `.gitignore`, `.gitattributes` (in any directory), `.mailmap` and the files it hashes with a
plain blocking open(): a FIFO the agent left under such a name makes gtd's own `git status`/`add`/`log`
(and the person's next `gtd status`) wait for ever. None of these kinds holds content worth committing,
so before host git runs, every one in the work tree is moved to the project's quarantine dir (the one
gitguard and placeholders use), and each is reported: a line on stderr and an audit entry.

The walk is workspace_files' way: each directory opened from its parent's descriptor with O_NOFOLLOW,
nothing followed, nothing of the special file opened (only lstat from the listing). It never enters a
`.git`. It runs before the first host git run of a process and again after any sandboxed session closed
(`forget`); while a session is open (an approval committed mid-build) it runs before every git run.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterator

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

_swept: set[str] = set()  # work trees swept since the last sandboxed session closed
_open_sessions = 0  # sandboxed sessions open in this process: while one is, nothing is remembered


def kind(mode: int) -> str | None:
    """What a special file is, in words; None for regular files, directories and symlinks."""
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        from gtd.workspace_files import kind_of

        return kind_of(mode)
    return None


def session_opened() -> None:
    """A sandboxed session started: the agent may create special files until it closes."""
    global _open_sessions
    _open_sessions += 1
    _swept.clear()


def forget() -> None:
    """A sandboxed session closed: the next host git run sweeps again."""
    global _open_sessions
    _open_sessions = max(0, _open_sessions - 1)
    _swept.clear()


def find(top: Path) -> Iterator[tuple[str, str]]:
    """(path relative to `top`, kind) of every special file below `top`, never through a symlink,
    never inside a `.git`. One directory is open at a time (a node_modules holds thousands of siblings):
    each is opened by its path from the root's descriptor, O_NOFOLLOW, and must still be the directory
    listed (its inode), so a symlink swapped in on the way is not followed. A directory that cannot be
    opened is skipped (gitguard deals with those)."""
    try:
        root = os.open(os.path.realpath(top), _DIR_FLAGS)
    except OSError:
        return
    try:
        stack: list[tuple[str, int | None]] = [("", None)]
        while stack:
            rel, inode = stack.pop()
            try:
                fd = os.open(rel, _DIR_FLAGS, dir_fd=root) if rel else os.dup(root)
            except OSError:
                continue
            try:
                if inode is not None and os.fstat(fd).st_ino != inode:
                    continue  # not the directory listed: swapped meanwhile (or a mount point)
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.name == ".git":
                            continue
                        path = os.path.join(rel, entry.name)
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                stack.append((path, entry.inode()))
                                continue
                            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                                continue  # from the listing's d_type: no stat for the usual entry
                            what = kind(entry.stat(follow_symlinks=False).st_mode)
                        except OSError:
                            continue
                        if what is not None:
                            yield path, what
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        os.close(root)


def _move(top: Path, rel: str, into: Path) -> str:
    """Move one special file into `into` (its path kept), or remove it when it cannot be moved (another
    file system: none of these kinds holds data). Returns what happened, in words."""
    from gtd.workspace_files import relative_parts

    parts = relative_parts(top, rel)
    dest = into.joinpath(*parts[:-1], parts[-1] + ".quarantined")
    root = os.open(os.path.realpath(top), _DIR_FLAGS)
    fd = root
    try:
        for name in parts[:-1]:
            next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            if fd != root:
                os.close(fd)
            fd = next_fd
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if kind(st.st_mode) is None:
            return "left alone (replaced by a regular file meanwhile)"
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rename(parts[-1], dest, src_dir_fd=fd)
            return f"quarantined in {dest}"
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EEXIST, errno.ENOTEMPTY):
                raise
            os.unlink(parts[-1], dir_fd=fd)
            return "removed (it holds no data; the quarantine dir is on another file system)"
    finally:
        if fd != root:
            os.close(fd)
        os.close(root)


_WHY = "git opens .gitignore, .gitattributes, .mailmap and the files it hashes: a FIFO would make it wait for ever"


def sweep(top: Path) -> list[tuple[str, str, str]]:
    """Move every special file out of the work tree at `top` (unless swept since the last session
    closed), report each, and return (path, kind, what happened) for each."""
    key = os.path.realpath(top)
    if key in _swept:
        return []
    found = list(find(top))
    if _open_sessions == 0:
        _swept.add(key)
    if not found:
        return []
    from datetime import datetime, timezone

    from gtd import paths
    from gtd.audit import AuditLog
    from gtd.terminal_text import visible, write

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    into = paths.project_state_dir(top) / "quarantine" / stamp
    audit = AuditLog(top)
    done = []
    for rel, what in found:
        try:
            happened = _move(top, rel, into)
        except OSError as exc:
            happened = f"COULD NOT MOVE OR REMOVE ({exc.strerror}): remove it before running git here"
        done.append((rel, what, happened))
        audit.record("special_file", path=rel, kind=what, result=happened, why=_WHY)
        write(f"gtd: {visible(rel, one_line=True)} is {what} in the work tree, moved out before host git runs "
              f"({_WHY}): {visible(happened, one_line=True)}\n", stream=sys.stderr)
    return done
