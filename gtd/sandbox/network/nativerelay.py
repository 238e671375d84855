"""The relay's copy loop in C (relay.c), loaded into gtd's own process: relayed bytes never wait for the GIL.

gtd's process runs Python work of its own while the proxy relays (the live view redraws, the agent's
output is parsed); with the copy loop in Python every relayed chunk waited for the GIL, up to the switch
interval (5 ms) per chunk. relay.c's loop runs inside one ctypes call, which releases the GIL.

What is loaded is host code in gtd's own process, so it comes only from gtd's state dir
(`user_state_dir()/native`), which no sandbox can write, never from beside this module (gtd's package
directory can be a workspace an agent writes). The file must be a regular file (not followed if it is a
symlink) owned by this user and writable by no one else; its bytes are copied into a sealed memfd and that
is what is loaded, so what was checked is what runs. Built by `scripts/setup`
(`python -m gtd.sandbox.network.nativerelay`), by `gtd doctor`, or in the background at the first relayed
connection; until then, and wherever there is no compiler or a check fails, relay.py's Python loop is used.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from gtd.sandbox import nativebuild

SOURCE = Path(__file__).with_name("relay.c")
# relay.c builds to ~14 KiB (~66-195 KiB linked for 64 KiB pages, aarch64's default): anything far bigger is not it
MAX_BYTES = 256 * 1024
FLAGS = ["-O2", "-s", "-shared", "-fPIC"]


def directory() -> Path:
    """gtd's state dir: no sandbox can write it (unlike gtd's own package directory)."""
    from gtd.paths import user_state_dir

    return user_state_dir() / "native"


def library_path() -> Path:
    return directory() / nativebuild.versioned_name("relay", SOURCE, ".so")


def build() -> Path | None:
    """Build the library into the state dir if it is not there; None when there is no compiler or it failed."""
    path = library_path()
    return nativebuild.compile_into(SOURCE, path.name, path.parent, FLAGS, max_bytes=MAX_BYTES, mode=0o600)


def load(path: Path):
    """relay.c's `gtd_relay_copy(src_fd, dst_fd, small_size, bulk_size)` from the library at `path`, or None
    when it is not there or not trusted (a symlink, not a regular file, another owner, writable by others)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if (not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o022
                or not 0 < found.st_size <= MAX_BYTES):
            return None
        data = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) != found.st_size:
        return None
    return _from_memory(data)


def _from_memory(data: bytes):
    """dlopen a sealed in-memory copy of `data`: nothing can change the file between the checks and the load."""
    import ctypes
    import fcntl

    try:
        memfd = os.memfd_create("gtd-relay", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):  # not Linux
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(memfd, view):]
        fcntl.fcntl(memfd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
        library = ctypes.CDLL(f"/proc/self/fd/{memfd}")  # kept open: this path names this library for good
        copy = library.gtd_relay_copy
    except (OSError, AttributeError):
        os.close(memfd)
        return None
    copy.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t]
    copy.restype = ctypes.c_longlong
    return copy


def main() -> int:
    """`python -m gtd.sandbox.network.nativerelay` (scripts/setup): build it into gtd's state dir."""
    built = build()
    return nativebuild.report("gtd proxy relay", built if built and load(built) is not None else None,
                              "the Python loop is used")


if __name__ == "__main__":
    sys.exit(main())
