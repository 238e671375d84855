"""The write watch's question (write_watch.py) under the Landlock backend: will Landlock refuse this call?

There is no mount namespace here: the command sees the host's file system, whose mounts are writable, so
bwrap's test (a read-only mount: EROFS) never holds. Landlock refuses a write whose object lies beneath
none of the launcher's `--write` rules (EACCES), and it asks that on the inode hierarchy of the path the
kernel resolved, not on the spelling: so does this module. Each rule is remembered by its inode when the
command starts (the launcher opens the same paths moments later, following links as here), and a path is
resolved with `openat2(RESOLVE_IN_ROOT)` beneath the process's own root, then walked up through `..` (mount
crossings included, as Landlock walks) until a granted inode or the root.

What Landlock checks, and where: opening an existing file for writing or truncating it, the file (then its
directories); creating (an open with O_CREAT of a missing file, mkdir, mknod, symlink, link) and removing or
renaming, the directory the entry is in. utimensat is not a Landlock right (metadata): never refused here.
"""

from __future__ import annotations

import os
import stat

from gtd.sandbox.linux.write_watch import CREATING, open_in_root, special

ON_THE_FILE = ("open", "openat", "creat", "truncate")  # the rest act on an entry of the path's directory
UNCHECKED = ("utimensat",)
REMOVING = ("unlink", "unlinkat", "rmdir")  # an entry that is not there: ENOENT, before Landlock is asked


class LandlockRefusals:
    """`refuses(root, path, call)` for write_watch.for_command, from the command's `--write` rules."""

    def __init__(self, writes: list[str]):
        self._granted: set[tuple[int, int]] = set()
        for path in writes:
            try:
                st = os.stat(path)  # follows links, as the launcher's open(O_PATH) does
            except OSError:
                continue  # a rule on a missing path is skipped by the launcher too
            self._granted.add((st.st_dev, st.st_ino))

    def __call__(self, root: int, path: str, call: str) -> str | None:
        """The path as the kernel resolved it (links followed, so the policy is asked about what Landlock
        refuses) when Landlock will refuse the call, else None."""
        if call in UNCHECKED:
            return None
        if call in ON_THE_FILE:
            fd = open_in_root(root, path)
            if fd is not None:  # an existing file: its own rule first, then its directories
                try:
                    st = os.fstat(fd)
                    if stat.S_ISDIR(st.st_mode) or special(fd) or (st.st_dev, st.st_ino) in self._granted:
                        return None  # a directory cannot be opened for writing; devices are the quiet /dev's
                    path = os.readlink(f"/proc/self/fd/{fd}")  # where the kernel found it
                finally:
                    os.close(fd)
        parent = open_in_root(root, os.path.dirname(path) or "/")
        if parent is None:
            return None  # the call fails with ENOENT (or ENOTDIR) before Landlock is asked
        name = os.path.basename(path)
        try:
            where = os.readlink(f"/proc/self/fd/{parent}")
            if call in CREATING + REMOVING and _exists(parent, name) is (call in CREATING):  # EEXIST, ENOENT
                os.close(parent)
                return None
        except OSError:
            os.close(parent)
            return None
        return None if self._beneath_granted(parent) else os.path.join(where, name)

    def _beneath_granted(self, fd: int) -> bool:
        """Whether the directory `fd` (closed here) or one above it holds a rule."""
        try:
            while True:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) in self._granted:
                    return True
                up = os.open("..", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = up
                above = os.fstat(fd)
                if (above.st_dev, above.st_ino) == (st.st_dev, st.st_ino):
                    return False  # the root, and no rule on the way
        except OSError:
            return False
        finally:
            os.close(fd)


def _exists(directory: int, name: str) -> bool:
    """Whether `directory` holds the entry `name` (a link counts as itself, never followed)."""
    try:
        os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
