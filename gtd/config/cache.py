"""Validated config loads, remembered so the fast commands skip pydantic (issue 13: start-up time).

Building gtd's pydantic models costs more than the whole start-up budget of `gtd config show` or
`gtd sandbox run`. A load that validated is stored under a key hashed from everything its result
depends on: the exact bytes of every config file (and of the trust store the project filter reads),
their paths, the flags, and the bytes of gtd's own config code and pydantic's version. Any change to
any of them is a different key, so an edited file is always validated again and an invalid config
can never come back from the cache. Entries live in gtd's state directory, which the sandbox
cannot write; a damaged entry is a miss.

A relocatable key names the project directory's files by their names instead of their paths, so the
same bytes in another project (every fresh clone without a `.gtdrc.json`, a template's config) are
one entry: the loader uses it only for loads whose result provably does not depend on where the
project is (config/loader.py).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from gtd.errors import GtdError

MAX_ENTRIES = 64

# gtd's own code that decides what a config file validates to: all of gtd/config/, plus the modules
# its validators and the project trust filter call into.
_CODE = ("escalation/trust.py", "sandbox/limits.py", "workspace_files.py")


@functools.cache
def _code_fingerprint() -> bytes:
    """sha256 of gtd's config code and pydantic's version, read once per process (a load can compute two
    keys, the relocatable and the exact one)."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for path in sorted((package / "config").glob("*.py")):
        _add_file(digest, path)
    for name in _CODE:
        _add_file(digest, package / name)
    spec = importlib.util.find_spec("pydantic")
    if spec is not None and spec.origin:
        _add_file(digest, Path(spec.origin).parent / "version.py")
    return digest.digest()


def _content(data: bytes) -> bytes:
    """A file's bytes as the key holds them: length-prefixed, so no content spells an absent or refused
    file's marker (a script config whose bytes are `<absent>`) or runs into the next file's entry."""
    return b"=%d:" % len(data) + data


def _add_file(digest: "hashlib._Hash", path: Path, workspace: Path | None = None, relocatable: bool = False,
              read: Callable[[str], bytes | None] | None = None) -> None:
    in_workspace = workspace is not None and path.parent == workspace
    digest.update((path.name if in_workspace and relocatable else str(path)).encode() + b"\0")
    try:
        if in_workspace:  # the project config: never followed, capped
            from gtd import workspace_files

            data = read(path.name) if read is not None else workspace_files.read_bytes(workspace, path.name)
            digest.update(b"<absent>" if data is None else _content(data))
        else:
            digest.update(_content(path.read_bytes()))
    except OSError:
        digest.update(b"<absent>")
    except GtdError:  # workspace_files.UnsafeWorkspacePath: a symlink or FIFO; the load itself reports it
        digest.update(b"<refused>")
    digest.update(b"\0")


def cache_key(files: Iterable[Path], extra: Any, workspace: Path | None = None, *, relocatable: bool = False,
              read: Callable[[str], bytes | None] | None = None) -> str:
    """sha256 over gtd's config code, each file's path and exact bytes (or absence), and `extra` (JSON).
    Files directly in `workspace` (the project config) are read by `read(name)` (the load's own reading,
    so the key names exactly the bytes that were validated) or else through gtd.workspace_files; with
    `relocatable`, they are named by their names alone (`extra` must not name the workspace either)."""
    digest = hashlib.sha256()
    digest.update(b"relocatable\0" if relocatable else b"exact\0")
    digest.update(_code_fingerprint())
    for path in files:
        _add_file(digest, path, workspace, relocatable, read)
    digest.update(json.dumps(extra, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def read(directory: Path, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads((directory / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def write(directory: Path, key: str, entry: dict[str, Any]) -> None:
    """Atomically store an entry (best effort: a read-only or full disk only costs speed)."""
    import tempfile  # here: a hit (every fast start) writes nothing

    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".cfg.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({**entry, "key": key}, out)
        os.replace(tmp, directory / f"{key}.json")
        _prune(directory)
    except OSError:
        pass


def _prune(directory: Path) -> None:
    entries = sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime)
    for stale in entries[:-MAX_ENTRIES]:
        stale.unlink(missing_ok=True)
