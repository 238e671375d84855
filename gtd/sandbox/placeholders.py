"""Bookkeeping for the empty files bwrap leaves as mount points of missing protected paths.

bwrap creates a mount point on the host (through the writable bind) for each read-only
placeholder. They are removed when the *last* sandbox session on that workspace ends: removing a
mount point on the host while another sandbox still uses it would silently unmount it there (Linux
detaches mounts of unlinked dentries in other namespaces), re-opening the path to that agent.
Sessions hold a shared lock while running; whoever can upgrade it to exclusive at close cleans up.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from gtd import paths


class PlaceholderRegistry:
    def __init__(self, workspace: Path):
        base = paths.locks_dir()
        base.mkdir(parents=True, exist_ok=True)
        key = paths.project_key(workspace)
        self._active_path = base / f"sandbox-{key}.active"
        self._list_path = base / f"sandbox-{key}.placeholders.json"
        self._list_lock_path = base / f"sandbox-{key}.placeholders.lock"
        self._active_fd: int | None = None

    def enter(self) -> None:
        self._active_fd = os.open(self._active_path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._active_fd, fcntl.LOCK_SH)

    def add(self, created: list[Path]) -> None:
        if not created:
            return
        with self._locked_list() as items:
            items.update(str(p) for p in created)

    def exit(self) -> list[Path]:
        """Release this session; if it was the last one, remove placeholders that are still empty files."""
        removed: list[Path] = []
        if self._active_fd is None:
            return removed
        try:
            fcntl.flock(self._active_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._active_fd)  # another session is running: it cleans up later
            self._active_fd = None
            return removed
        try:
            with self._locked_list() as items:
                for item in sorted(items, key=len, reverse=True):
                    p = Path(item)
                    try:
                        st = p.lstat()
                        if p.is_file() and not p.is_symlink() and st.st_size == 0:
                            p.unlink()
                            removed.append(p)
                    except OSError:
                        pass
                items.clear()
        finally:
            os.close(self._active_fd)
            self._active_fd = None
        return removed

    class _List:
        def __init__(self, reg: "PlaceholderRegistry"):
            self.reg = reg

        def __enter__(self) -> set[str]:
            self.fd = os.open(self.reg._list_lock_path, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                self.items = set(json.loads(self.reg._list_path.read_text()))
            except (OSError, ValueError):
                self.items = set()
            return self.items

        def __exit__(self, *exc) -> None:
            try:
                tmp = self.reg._list_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(sorted(self.items)))
                os.replace(tmp, self.reg._list_path)
            finally:
                os.close(self.fd)

    def _locked_list(self) -> "PlaceholderRegistry._List":
        return PlaceholderRegistry._List(self)
