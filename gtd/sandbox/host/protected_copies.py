"""Protected paths the Landlock backend cannot keep read-only, copied at start and put back at the end.

Landlock grants whole trees. An agent CLI's state dir (writable, outside the workspace) holds protected
files (its settings, hooks, login) and must take new entries (session dirs, caches) at its top: a split
grant (workspace-style, entry by entry) would refuse those. So such a dir is granted whole, and each
protected path in it that exists is copied here first (into gtd's state dir, which no sandbox can write).
When the session ends, after every sandboxed process is gone, a path whose tree differs from its copy is
quarantined and the copy put back; one that vanished is put back. What the agent changed there held only
inside the sandbox, for the session (docs/landlock-backend.md).

Nothing the agent made is followed: trees are compared and walked with lstat only, and a path is put back
only where every directory on the way from its writable root is still a real directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

MAX_BYTES = 64 * 1024 * 1024  # a bigger protected tree is not copied: its root is split instead (the caller)


class TooBig(Exception):
    """The protected paths of a root hold more than MAX_BYTES."""


def tree_digest(path: Path) -> str:
    """Names, types, modes, file contents and link targets of everything at and below `path`, no link followed."""
    h = hashlib.sha256()
    for rel, st in _walk(path):
        h.update(f"{rel}\0{stat.S_IFMT(st.st_mode)}\0{stat.S_IMODE(st.st_mode)}\0".encode("utf-8", "surrogateescape"))
        full = path / rel if rel else path
        if stat.S_ISREG(st.st_mode):
            with open(full, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        elif stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(full).encode("utf-8", "surrogateescape"))
        h.update(b"\1")
    return h.hexdigest()


def _walk(path: Path, rel: str = ""):
    st = os.lstat(path / rel if rel else path)
    yield rel, st
    if stat.S_ISDIR(st.st_mode):
        for name in sorted(os.listdir(path / rel if rel else path)):
            yield from _walk(path, os.path.join(rel, name) if rel else name)


def _size(path: Path) -> int:
    return sum(st.st_size for _, st in _walk(path) if stat.S_ISREG(st.st_mode))


class ProtectedCopies:
    def __init__(self, into: Path):
        self.into = into  # private to this session, in gtd's state dir
        self._kept: list[tuple[Path, Path, Path, str]] = []  # (root, protected path, its copy, digest)

    def keep(self, root: Path, paths: list[Path]) -> None:
        """Copy each existing protected path below writable `root`. Raises TooBig (nothing kept for the root)."""
        found = [p for p in paths if os.path.lexists(p)]
        if sum(_size(p) for p in found) > MAX_BYTES:
            raise TooBig(str(root))
        for p in found:
            copy = self.into / str(len(self._kept))
            self.into.mkdir(parents=True, exist_ok=True, mode=0o700)
            _copy(p, copy)
            self._kept.append((root, p, copy, tree_digest(p)))

    def restore(self, quarantine_into: Path) -> list[tuple[Path, str]]:
        """Put back every kept path that changed or vanished; returns (path, what happened) for each."""
        from gtd.sandbox.host.gitguard import quarantine

        done: list[tuple[Path, str]] = []
        for root, p, copy, digest in self._kept:
            try:
                if os.path.lexists(p) and tree_digest(p) == digest:
                    continue
            except OSError:
                pass  # unreadable now (chmod 000): changed
            if not _real_dirs_between(root, p.parent):
                done.append((p, "a protected path's directory was replaced; NOT restored: check it"))
                continue
            label = "protected path changed in the sandbox (Landlock backend)"
            moved = quarantine([p], root, quarantine_into, what={p: label}) if os.path.lexists(p) else []
            try:
                _copy(copy, p)
                done += [(q, f"{what}; the original was put back") for q, what in moved] or [(p, f"{label}: put back")]
            except OSError as exc:
                done.append((p, f"{label}; COULD NOT put the original back ({exc})"))
        return done

    def close(self) -> None:
        shutil.rmtree(self.into, ignore_errors=True)
        self._kept.clear()


def _copy(source: Path, target: Path) -> None:
    if os.path.isdir(source) and not os.path.islink(source):
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)


def _real_dirs_between(root: Path, parent: Path) -> bool:
    """Whether every component from `root` down to `parent` is a real directory (no symlink swapped in); a
    missing one is made."""
    if not os.path.isdir(root) or os.path.islink(root):
        return False
    current = root
    for part in (parent.relative_to(root).parts if parent != root else ()):
        current = current / part
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except FileNotFoundError:
            os.mkdir(current, 0o755)  # removed in the sandbox: made again, as a real directory
        except OSError:
            return False
    return True
