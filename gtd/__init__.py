"""gtd: run a coding agent through plan -> build -> learn inside an OS sandbox."""

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _never_import_from_the_workspace() -> None:
    """`python -m gtd` (or any `-m gtd.…`) puts the current directory first on sys.path, so a
    `typer.py`, `json.py` or `rich/` planted in the workspace would run as gtd, on the host, outside
    the sandbox. This package is imported before any of gtd's other imports: drop the current
    directory (and relative entries, which mean it too) here. `os` and `sys` are loaded at start-up,
    never looked up on sys.path. The `gtd` console script has its own bin directory as sys.path[0]."""
    if _sys.argv[:1] != ["-m"] and _os.path.basename(_sys.argv[0] if _sys.argv else "") != "gtd":
        return  # imported as a library (tests, a tool): its sys.path is its caller's business
    cwd = _os.path.realpath(_os.getcwd())
    _sys.path[:] = [entry for entry in _sys.path
                    if entry and _os.path.isabs(entry) and _os.path.realpath(entry) != cwd]


_never_import_from_the_workspace()
