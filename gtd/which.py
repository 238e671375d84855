"""`which(name)`: shutil.which's POSIX search, without importing shutil.

shutil imports zlib, bz2 and lzma (~2 ms on the start-up path of every `gtd sandbox run`, issue 13),
and the start needs from it only the PATH look-ups (bwrap, unshare, the agent CLI, git). The search is
shutil.which's own on POSIX: a name with a slash is checked as given; otherwise each directory of
$PATH (else the system's default path) in order, each at most once, for an existing, executable
non-directory. Everything else of shutil is imported where it is used. On Windows, shutil.which.
"""

from __future__ import annotations

import os
import sys


def _executable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path)


def which(name: str, path: str | None = None) -> str | None:
    if sys.platform == "win32":  # pragma: no cover - PATHEXT and the current directory: shutil's business
        import shutil

        return shutil.which(name, path=path)
    if os.path.dirname(name):
        return name if _executable(name) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    seen = set()
    for directory in os.fsdecode(path).split(os.pathsep):
        if directory not in seen:
            seen.add(directory)
            candidate = os.path.join(directory, name)
            if _executable(candidate):
                return candidate
    return None
