"""What a sandbox session leaves to check or clean on the host, kept across crashes.

Three kinds of paths, recorded per workspace in gtd's locks dir (outside every sandbox):

- `placeholder`: an empty file bwrap created on the host as the mount point of a missing protected
  path *outside* the workspace (a writable part of HOME). Removed when still an empty regular file.
- `created`: the phase's own file, created empty so it could be bound (TODO.md at readonly).
  Removed when the agent left it empty.
- `parent`: a directory gtd created on the host so that a placeholder could sit on the protected
  path itself (~/.config for ~/.config/git, when HOME is writable and has no ~/.config). Removed
  (rmdir) when still an empty directory reached without a symlink.
- `watched`: a protected path inside the workspace that was missing when a command started. It gets
  no mount (a mount point would be a phantom file in the work tree), so if it exists afterwards the
  agent planted it: it is moved to the project's quarantine dir and reported.

All of this happens when the *last* session on the workspace ends: removing a mount point on the
host while another sandbox still uses it would silently unmount it there (Linux detaches mounts of
unlinked dentries in other namespaces). Sessions hold a shared lock while running; whoever can take
it exclusively cleans up: at close, or at the next start when a session was killed (kill -9 of gtd)
and left its list behind.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from pathlib import Path

from gtd import paths

KINDS = ("placeholder", "created", "parent", "watched")


def empty_file() -> Path:
    """gtd's own empty, read-only regular file: what a placeholder shows inside the sandbox (an empty
    file reads as empty; /dev/null would read as EACCES, since bwrap's binds are nodev)."""
    base = paths.locks_dir()
    base.mkdir(parents=True, exist_ok=True)
    path = base / "empty"
    for _ in range(5):  # concurrent gtd starts race on the first creation: re-check on EEXIST
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size == 0:
                return path
            path.unlink()
        except FileNotFoundError:
            pass
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444))
            return path
        except FileExistsError:
            continue
    raise OSError(f"gtd could not create its empty placeholder file {path}: something keeps replacing it")


def settle_leftovers(workspace: Path) -> list[tuple[Path, str]]:
    """Settle what a killed session left (when no session runs): called before gtd commits the
    person's edits, so a planted protected path or an empty placeholder is never committed. (What a
    session's enter() and exit() would both do, settled once.)"""
    return PlaceholderRegistry(workspace).settle_alone()


class PlaceholderRegistry:
    def __init__(self, workspace: Path):
        base = paths.locks_dir()
        base.mkdir(parents=True, exist_ok=True)
        key = paths.project_key(workspace)
        self.workspace = workspace
        self._active_path = base / f"sandbox-{key}.active"
        self._list_path = base / f"sandbox-{key}.placeholders.json"
        self._list_lock_path = base / f"sandbox-{key}.placeholders.lock"
        self._active_fd: int | None = None

    def enter(self) -> list[tuple[Path, str]]:
        """Join the running sessions. When none is running, first settle what a killed session left:
        returns (path, what happened) for each path that needed it."""
        self._active_fd = self._open_active()
        settled = self._settle_if_alone(self._active_fd)
        fcntl.flock(self._active_fd, fcntl.LOCK_SH)
        return settled

    def settle_alone(self) -> list[tuple[Path, str]]:
        """Settle the list when no session is running (joining none)."""
        fd = self._open_active()
        try:
            return self._settle_if_alone(fd)
        finally:
            os.close(fd)

    def _open_active(self) -> int:
        return os.open(self._active_path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)

    def _settle_if_alone(self, active_fd: int) -> list[tuple[Path, str]]:
        try:
            fcntl.flock(active_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return []  # other sessions are running: the last of them settles the list
        return self._settle()

    def add(self, created: list[Path] = (), *, placeholders: list[Path] = (),
            watched: list[tuple[Path, Path]] = (), parents: list[Path] = ()) -> None:
        """`watched`: (protected path, its first component that was missing when the command started)."""
        entries = {**{str(p): "created" for p in created}, **{str(p): "placeholder" for p in placeholders},
                   **{str(p): "parent" for p in parents},
                   **{f"{p}\0{first}": "watched" for p, first in watched}}
        if not entries:
            return
        with self._locked_list() as items:
            for path, kind in entries.items():
                items.setdefault(path, kind)

    def exit(self) -> list[tuple[Path, str]]:
        """Release this session; if it was the last one, settle the list (see the module doc)."""
        settled: list[tuple[Path, str]] = []
        if self._active_fd is None:
            return settled
        try:
            fcntl.flock(self._active_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._active_fd)  # another session is running: it cleans up later
            self._active_fd = None
            return settled
        try:
            settled = self._settle()
        finally:
            os.close(self._active_fd)
            self._active_fd = None
        return settled

    def _settle(self) -> list[tuple[Path, str]]:
        from gtd.sandbox.host.gitguard import quarantine

        done: list[tuple[Path, str]] = []
        with self._locked_list() as items:
            planted = list(dict.fromkeys(found for key, kind in items.items() if kind == "watched"
                                         for found in [_planted(*key.split("\0", 1))] if found is not None))
            for item, kind in sorted(items.items(), key=lambda kv: len(kv[0]), reverse=True):
                if kind == "watched":
                    continue
                p = Path(item)
                parent_fd = _open_dir_exactly(str(p.parent))
                if parent_fd is None:
                    continue  # moved, or a parent swapped for a symlink: never remove through it
                try:
                    st = os.stat(p.name, dir_fd=parent_fd, follow_symlinks=False)
                    if kind == "parent" and stat.S_ISDIR(st.st_mode):
                        os.rmdir(p.name, dir_fd=parent_fd)  # only ever an empty directory
                        done.append((p, "removed the empty directory gtd created for a placeholder"))
                    elif kind != "parent" and stat.S_ISREG(st.st_mode) and st.st_size == 0:
                        os.unlink(p.name, dir_fd=parent_fd)
                        done.append((p, f"removed the empty {kind} file"))
                except OSError:
                    pass
                finally:
                    os.close(parent_fd)
            if planted:
                into = paths.project_state_dir(self.workspace) / "quarantine"
                for path, what in quarantine(planted, self.workspace, into):
                    done.append((path, what.replace("planted git metadata", "created a protected path")))
            items.clear()
        return done

    class _List:
        def __init__(self, reg: "PlaceholderRegistry"):
            self.reg = reg

        def __enter__(self) -> dict[str, str]:
            self.fd = os.open(self.reg._list_lock_path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                data = json.loads(self.reg._list_path.read_text())
            except (OSError, ValueError):
                data = {}
            # As stored (absent: nothing): an unchanged list is not written back (two writes a session).
            self.stored = dict(data) if isinstance(data, dict) else None
            if isinstance(data, list):  # the format before `watched`: every entry was a placeholder
                data = {str(p): "placeholder" for p in data}
            self.items = {str(k): v for k, v in data.items() if v in KINDS} if isinstance(data, dict) else {}
            return self.items

        def __exit__(self, *exc) -> None:
            try:
                if self.items == self.stored:
                    return
                tmp = self.reg._list_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(self.items, sort_keys=True))
                os.replace(tmp, self.reg._list_path)
            finally:
                os.close(self.fd)

    def _locked_list(self) -> "PlaceholderRegistry._List":
        return PlaceholderRegistry._List(self)


def _open_dir_exactly(path: str) -> int | None:
    """A descriptor of the directory at exactly this path, or None: the path must name it without any
    symlink on the way (checked on the opened descriptor, so a parent swapped for a symlink between a
    check and the open is caught). Removing through it then removes from that directory only."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc (macOS): the resolved path and the opened directory must agree
        where = os.path.realpath(path)
        st, now = os.fstat(fd), os.stat(where)
        if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
            where = None
    if where != os.path.normpath(path):
        os.close(fd)
        return None
    return fd


def _planted(path: str, first_missing: str) -> Path | None:
    """What to quarantine for a watched protected path: the first new component on the way to it
    that is a symlink or not a directory (never followed), else the protected path itself if it
    exists now. None when the agent created nothing that matters (e.g. only a sibling state dir)."""
    current = Path(first_missing)
    rest = Path(path).relative_to(current).parts
    for i in range(len(rest) + 1):
        if not os.path.lexists(current):
            return None
        if i == len(rest):
            return current
        if os.path.islink(current) or not os.path.isdir(current):
            return current
        current = current / rest[i]
    return None
