"""Validated config loads, remembered so the fast commands skip pydantic (issue 13: start-up time).

Building gtd's pydantic models costs more than the whole start-up budget of `gtd config show` or
`gtd sandbox run`. A load that validated is stored under a key hashed from everything its result
depends on: the exact bytes of every config file (and of the trust store the project filter reads),
their paths, the flags, and gtd's own config code and pydantic's version. Any change to any of them
is a different key, so an edited file is always validated again and an invalid config can never come
back from the cache. Entries live in gtd's state directory, which the sandbox cannot write; a damaged
entry is a miss.

gtd's own code is keyed by each file's identity (device, inode, size, mtime and ctime), not its bytes:
reading and hashing ~15 files cost ~1 ms of every start (issue 13). That is enough for what the code
part of the key is for (an upgrade or an edit of gtd must not reuse a load validated by other code):
any write to a file moves its ctime, which no process can set back (only a change of the system clock
could), and a reinstall or checkout writes new files. It is not a defence and needs none: these are
gtd's installed files, never workspace files, and whoever can rewrite them runs their code in gtd
anyway. The config files themselves, which the sandbox may be able to write, are keyed by their bytes.

A relocatable key names the project directory's files by their names instead of their paths, so the
same bytes in another project (every fresh clone without a `.gtdrc.json`, a template's config) are
one entry: the loader uses it only for loads whose result provably does not depend on where the
project is (config/loader.py).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from pathlib import Path

from gtd.digest import sha256
from gtd.errors import GtdError

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

MAX_ENTRIES = 64

# gtd's own code that decides what a config file validates to: all of gtd/config/, plus the modules
# its validators and the project trust filter call into.
_CODE = ("escalation/trust.py", "sandbox/linux/limits.py", "workspace_files.py", "providers/cli_models.py")


@functools.cache
def _code_fingerprint() -> bytes:
    """The identity of gtd's config code and of pydantic's version module, taken once per process (a load
    can compute two keys, the relocatable and the exact one)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    config = os.path.join(package, "config")
    names = [os.path.join(config, name) for name in sorted(os.listdir(config))
             if name.endswith(".py") and not name.startswith(".")]
    names += [os.path.join(package, name) for name in _CODE]
    spec = importlib.util.find_spec("pydantic")
    if spec is not None and spec.origin:
        names.append(os.path.join(os.path.dirname(spec.origin), "version.py"))
    return files_identity(names)


def files_identity(names: Iterable[str]) -> bytes:
    """sha256 over each file's name, device, inode, size, mtime and ctime (see the module's docstring:
    for gtd's own installed code only, never for a file the sandbox can write)."""
    digest = sha256()
    for name in names:
        try:
            st = os.stat(name)
            identity = f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"
        except OSError:
            identity = "<absent>"
        digest.update(f"{name}\0{identity}\0".encode())
    return digest.digest()


def _content(data: bytes) -> bytes:
    """A file's bytes as the key holds them: length-prefixed, so no content spells an absent or refused
    file's marker (a script config whose bytes are `<absent>`) or runs into the next file's entry."""
    return b"=%d:" % len(data) + data


def _add_file(digest, path: Path, workspace: Path | None = None, relocatable: bool = False,
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
    digest = sha256()
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
