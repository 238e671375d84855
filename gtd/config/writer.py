"""Atomic, format-preserving, concurrency-safe edits of a config file (used by approvals).

An edit re-reads the file under an inter-process lock, applies one change to the parsed
document (tomlkit for TOML so comments survive; key order kept for JSON), validates the
result, and replaces the file atomically. An invalid result writes nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, MutableMapping

import tomlkit
from filelock import FileLock

from gtd import workspace_files
from gtd.config import json_edit
from gtd.config.files import detect_json_indent, dump_document, is_toml, parse_document, read_config_text, to_plain
from gtd.config.validation import strip_legacy_keys, validate_layer
from gtd.digest import sha256
from gtd.errors import ConfigError
from gtd.paths import locks_dir
from gtd.record import record

LOCK_TIMEOUT_SECONDS = 30


def config_lock(path: Path, *, purpose: str = "", timeout: float = LOCK_TIMEOUT_SECONDS) -> FileLock:
    """One lock per config file (and `purpose`: a longer operation around the write has a lock of its
    own), kept in gtd's state (never next to the file in the repo)."""
    directory = locks_dir()
    directory.mkdir(parents=True, exist_ok=True)
    digest = sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return FileLock(str(directory / f"{purpose}{digest}.lock"), timeout=timeout)


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same directory + fsync + rename: readers see old or new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@record(frozen=True)
class ConfigEdit:
    """What one edit read and what it wrote: the only bytes gtd may vouch for afterwards are
    `written` (the file on disk can change again the moment the write is done)."""

    before: str | None  # the text the edit started from; None when there was no file
    written: bytes  # exactly the bytes gtd wrote


def edit_config_file(path: Path, mutate: Callable[[MutableMapping[str, Any]], None], *,
                     workspace: Path | None = None) -> ConfigEdit:
    """Edit one config file. A file inside `workspace` (the project config) is read and replaced
    through gtd.workspace_files: never through a symlink, never a special file."""
    path = Path(path)
    with config_lock(path):
        before = read_config_text(path, workspace=workspace)
        text = edited_text(path, before or "", mutate)
        write_config_text(path, text, workspace=workspace)
        return ConfigEdit(before, text.encode("utf-8"))


def edited_text(path: Path, text: str, mutate: Callable[[MutableMapping[str, Any]], None]) -> str:
    """The file's text after one change, validated, in the file's own format and style. Pure: used
    for the file on disk and for the committed version alike (a 🔐 commit holds only gtd's change)."""
    document = parse_document(path, text)
    if not isinstance(to_plain(document), dict):
        raise ConfigError(str(path), "", "the top level must be an object")
    mutate(document)
    plain, _ = strip_legacy_keys(to_plain(document), str(path))
    validate_layer(plain, str(path))
    indent = detect_json_indent(text) if text else 2
    if not is_toml(path) and text.strip():
        try:  # only the change is written: the person's formatting stays byte for byte
            return json_edit.edit(text, to_plain(document), indent)
        except (ValueError, RecursionError):
            pass  # not editable in place (nesting deeper than Python's stack): the whole file, re-dumped
    return dump_document(path, document, indent=indent, original=text)


def write_config_text(path: Path, text: str, *, workspace: Path | None = None) -> None:
    """Atomically write a config file; inside `workspace` through gtd.workspace_files."""
    if workspace is None:
        atomic_write(path, text)
        return
    try:
        workspace_files.write_text(workspace, path, text)
    except workspace_files.UnsafeWorkspacePath as exc:
        raise ConfigError(str(path), "", exc.reason) from None


def _walk(document: MutableMapping[str, Any], dotted_key: str) -> tuple[MutableMapping[str, Any], str]:
    """The container holding the last part of the key, creating objects/tables on the way."""
    *parents, last = dotted_key.split(".")
    node = document
    for part in parents:
        if part not in node:
            node[part] = tomlkit.table() if isinstance(document, tomlkit.TOMLDocument) else {}
        node = node[part]
        if not isinstance(node, MutableMapping):
            raise ConfigError("", dotted_key, f"'{part}' is not an object")
    return node, last


def set_key(document: MutableMapping[str, Any], dotted_key: str, value: Any) -> None:
    node, last = _walk(document, dotted_key)
    node[last] = value


def append_unique(document: MutableMapping[str, Any], dotted_key: str, value: Any) -> bool:
    """Append to a list key unless already there. Returns whether anything changed."""
    node, last = _walk(document, dotted_key)
    if last not in node:
        node[last] = tomlkit.array() if isinstance(document, tomlkit.TOMLDocument) else []
    if value in to_plain(node[last]):
        return False
    node[last].append(value)
    return True


def remove_value(document: MutableMapping[str, Any], dotted_key: str, value: Any) -> bool:
    """Remove a value from a list key (used for tightening). Returns whether anything changed."""
    node, last = _walk(document, dotted_key)
    items = node.get(last)
    if items is None or value not in to_plain(items):
        return False
    items.remove(value)
    return True
