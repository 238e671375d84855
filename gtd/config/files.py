"""Reading one config file (JSON or TOML) into a plain dict, with errors that name the file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import ParseError

from gtd import workspace_files
from gtd.errors import ConfigError


def is_toml(path: Path) -> bool:
    return path.suffix.lower() == ".toml"


def parse_document(path: Path, text: str) -> Any:
    """Parse text as the file's format. TOML comes back as a tomlkit document (comments kept)."""
    if is_toml(path):
        try:
            return tomlkit.parse(text)
        except ParseError as exc:
            raise ConfigError(str(path), "", f"invalid TOML: {exc}") from None
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(str(path), "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


def to_plain(document: Any) -> Any:
    """A tomlkit document (or anything else) as plain Python values."""
    return document.unwrap() if hasattr(document, "unwrap") else document


def read_config_file(path: Path, *, workspace: Path | None = None) -> dict[str, Any]:
    """The file's content as a plain dict; a missing or unreadable file is an error naming it.
    A file inside `workspace` (the project config) is read without following symlinks, capped."""
    text = read_config_text(path, workspace=workspace)
    if text is None:
        raise ConfigError(str(path), "", "cannot read file: No such file or directory")
    return config_from_text(path, text)


def config_from_text(path: Path, text: str) -> dict[str, Any]:
    """A config file's text (read by the caller) as a plain dict; errors name the file."""
    data = to_plain(parse_document(path, text))
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", f"the top level must be an object, not {type(data).__name__}")
    return data


def read_config_text(path: Path, *, workspace: Path | None = None) -> str | None:
    """The file's text, or None when missing. In a workspace: through gtd.workspace_files (a symlink,
    FIFO or huge file is a ConfigError naming the file); elsewhere (the user's own config) a plain read."""
    if workspace is not None:
        try:
            return decode_config_bytes(path, workspace_files.read_bytes(workspace, path))
        except workspace_files.UnsafeWorkspacePath as exc:
            raise ConfigError(str(path), "", exc.reason) from None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc.strerror}") from None


def decode_config_bytes(path: Path, data: bytes | None) -> str | None:
    """A config file's bytes as text (None for a missing file); not UTF-8 is an error naming it."""
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(str(path), "", "not valid UTF-8") from None


def dump_document(path: Path, document: Any, *, indent: int = 2, original: str = "") -> str:
    """The document as text. JSON keeps the original's style: arrays written on one line stay on one line."""
    if is_toml(path):
        return tomlkit.dumps(document)
    return dump_json(document, indent=indent, compact_keys=compact_array_keys(original)) + "\n"


_INLINE_ARRAY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*\[[^\[\]\n]*\]')


def compact_array_keys(text: str) -> set[str]:
    """Keys whose array value the file writes on a single line (`"allowDomains": ["a", "b"]`)."""
    return {match.group(1) for match in _INLINE_ARRAY.finditer(text)}


def dump_json(value: Any, *, indent: int = 2, compact_keys: set[str] | None = None, _level: int = 0,
              _key: str | None = None) -> str:
    """json.dumps(indent=...) except that arrays of scalars under `compact_keys` stay on one line."""
    compact_keys = compact_keys or set()
    pad, inner = " " * (indent * _level), " " * (indent * (_level + 1))
    if isinstance(value, dict):
        if not value:
            return "{}"
        parts = [f"{inner}{json.dumps(k, ensure_ascii=False)}: "
                 f"{dump_json(v, indent=indent, compact_keys=compact_keys, _level=_level + 1, _key=k)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(parts) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if _key in compact_keys and all(not isinstance(v, (dict, list)) for v in value):
            return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
        parts = [f"{inner}{dump_json(v, indent=indent, compact_keys=compact_keys, _level=_level + 1)}" for v in value]
        return "[\n" + ",\n".join(parts) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


def detect_json_indent(text: str, default: int = 2) -> int:
    """Keep the file's own indentation when rewriting it."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) != len(line):
            return len(line) - len(stripped)
    return default
