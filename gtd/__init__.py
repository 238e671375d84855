"""gtd: run a coding agent through plan -> build -> learn inside an OS sandbox."""

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _never_import_from_the_workspace() -> None:
    """`python -m gtd` (or any `-m gtd.…`) puts the current directory first on sys.path, so a
    `typer.py`, `json.py` or `rich/` planted in the workspace would run as gtd, on the host, outside
    the sandbox. This package is imported before any of gtd's other imports: drop the current
    directory (and relative entries, which mean it too) here. `os` and `sys` are loaded at start-up,
    never looked up on sys.path. The `gtd` console script has its own bin directory as sys.path[0].
    An entry is the current directory when it is the same directory (device and inode: one stat per
    entry, where resolving each path cost ~0.2 ms of every start), whatever the spelling or links."""
    if _sys.argv[:1] != ["-m"] and _os.path.basename(_sys.argv[0] if _sys.argv else "") != "gtd":
        return  # imported as a library (tests, a tool): its sys.path is its caller's business
    here = _os.stat(".")
    _sys.path[:] = [entry for entry in _sys.path if entry and _os.path.isabs(entry) and not _same(entry, here)]


def _same(entry: str, here: _os.stat_result) -> bool:
    try:
        found = _os.stat(entry)
    except OSError:
        return False  # nothing there (python311.zip): not the current directory
    return (found.st_dev, found.st_ino) == (here.st_dev, here.st_ino)


_never_import_from_the_workspace()
