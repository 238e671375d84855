"""Programs gtd itself runs on the host, looked up on PATH without the places the agent writes.

A PATH entry inside the workspace (an activated project venv, `node_modules/.bin`, direnv's `PATH_add bin`)
or a relative one (`.`, `bin`, an empty entry: the current directory) holds whatever the agent put there:
a `bwrap`, `git`, `unshare`, `mount` or `cc` planted in it would run on the host, outside the sandbox, the
next time gtd starts one. So gtd finds its own programs, and gives the ones it starts a PATH, without them.
The sandbox's PATH is left as the person set it: inside, those directories are the agent's anyway.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from gtd.which import which

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterable


def _default_untrusted() -> list[Path]:
    from gtd.paths import find_repo_root

    cwd = Path.cwd()
    return [find_repo_root(cwd) or cwd]


def _roots(untrusted: Iterable[Path | str] | None) -> tuple[str, ...]:
    return tuple(os.path.realpath(r) for r in (_default_untrusted() if untrusted is None else untrusted))


def host_path(untrusted: Iterable[Path | str] | None = None) -> str:
    """PATH without relative entries and without entries in `untrusted` (default: the repository gtd
    runs in), each compared by where it really is."""
    return _without(os.environ.get("PATH", os.defpath), _roots(untrusted))


def _trusted(entry: str, roots: tuple[str, ...]) -> bool:
    """An absolute path that is not, once resolved, in or under one of `roots`."""
    if not os.path.isabs(entry):
        return False
    real = os.path.realpath(entry)  # (containment.inside's test, without importing gtd.sandbox on `gtd status`)
    return not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


@lru_cache(maxsize=32)
def _without(path: str, roots: tuple[str, ...]) -> str:
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if entry and _trusted(entry, roots))


def host_program(name: str, untrusted: Iterable[Path | str] | None = None) -> str | None:
    """The absolute path of `name` on host_path(untrusted); None when it is only found in an untrusted place.
    A name with a directory part (`CC=tools/cc`) is taken as given only when it is absolute and outside the
    untrusted places: a relative one names a file under the current directory, the workspace."""
    if os.path.dirname(name):
        return which(name) if _trusted(name, _roots(untrusted)) else None
    return which(name, path=host_path(untrusted)) or None


def host_environment(untrusted: Iterable[Path | str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: gtd's environment) with host_path as PATH, for a program gtd runs on the host that
    starts programs by name itself (git's pager and helpers, `unshare`'s `sh` and `mount`, the compiler's
    assembler)."""
    return {**(os.environ if base is None else base), "PATH": host_path(untrusted)}
