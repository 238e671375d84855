"""Trust pinning: a project config that loosens the sandbox counts only once the user trusts it.

A freshly cloned repository must not be able to grant its agent more than the defaults.
Loosening entries in `.gtdrc.json` (extra allowed domains or writable paths, a phase at a
higher level, the sandbox disabled) are honoured only while the file's exact content
matches the sha256 the user pinned with `gtd trust`. Tightening is always honoured.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from filelock import FileLock

from gtd.config.schema import GtdConfig, Level
from gtd.config.writer import atomic_write
from gtd.paths import user_state_dir

TRUST_FILE = "trust.json"
LOOSENING_LISTS = ("allowDomains", "writablePaths")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TrustStore:
    """Pinned hashes of project config files the user trusts, keyed by absolute path."""

    def __init__(self, directory: Path | None = None):
        directory = directory or user_state_dir()
        self.path = directory / TRUST_FILE
        self._lock_path = directory / f"{TRUST_FILE}.lock"

    def _lock(self) -> FileLock:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self._lock_path), timeout=30)

    def _read(self) -> dict[str, str]:
        return json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}

    def pinned(self, config_file: Path) -> str | None:
        return self._read().get(str(config_file.resolve()))

    def is_trusted(self, config_file: Path) -> bool:
        return config_file.exists() and self.pinned(config_file) == file_digest(config_file)

    def trust(self, config_file: Path) -> str:
        digest = file_digest(config_file)
        with self._lock():
            pins = self._read()
            pins[str(config_file.resolve())] = digest
            atomic_write(self.path, json.dumps(pins, indent=2) + "\n")
        return digest

    def revoke(self, config_file: Path) -> bool:
        with self._lock():
            pins = self._read()
            removed = pins.pop(str(config_file.resolve()), None) is not None
            atomic_write(self.path, json.dumps(pins, indent=2) + "\n")
        return removed


def loosening_entries(values: dict[str, Any]) -> list[str]:
    """What in a project layer loosens the sandbox beyond the built-in defaults, as `key: value`."""
    defaults = GtdConfig().sandbox
    sandbox = values.get("sandbox", {})
    found = []
    if sandbox.get("enabled") is False:
        found.append("sandbox.enabled: false")
    for phase, level in sandbox.get("phases", {}).items():
        if Level(level).rank > getattr(defaults.phases, phase).rank:
            found.append(f"sandbox.phases.{phase}: {level}")
    for level, rules in sandbox.get("levels", {}).items():
        default_rules = getattr(defaults.levels, level)
        for key in LOOSENING_LISTS:
            default_values = getattr(default_rules, "allow_domains" if key == "allowDomains" else "writable_paths")
            for item in rules.get(key, []):
                if item not in default_values:
                    found.append(f"sandbox.levels.{level}.{key}: {item}")
    return found


def without_loosening(values: dict[str, Any]) -> dict[str, Any]:
    """The layer with every loosening entry removed; tightening and unrelated keys kept."""
    kept = copy.deepcopy(values)
    sandbox = kept.get("sandbox")
    if not sandbox:
        return kept
    defaults = GtdConfig().sandbox
    if sandbox.get("enabled") is False:
        del sandbox["enabled"]
    phases = sandbox.get("phases", {})
    for phase in [p for p, level in phases.items() if Level(level).rank > getattr(defaults.phases, p).rank]:
        del phases[phase]
    for level, rules in sandbox.get("levels", {}).items():
        default_rules = getattr(defaults.levels, level)
        for key in LOOSENING_LISTS:
            if key in rules:
                default_values = getattr(default_rules, "allow_domains" if key == "allowDomains" else "writable_paths")
                rules[key] = [item for item in rules[key] if item in default_values]
    return kept


def filter_untrusted_project(path: Path, values: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The config loader's project filter: drop loosening from an untrusted (or changed) file."""
    loosening = loosening_entries(values)
    if not loosening or TrustStore().is_trusted(path):
        return values, []
    shown = "; ".join(loosening[:5]) + (f" (+{len(loosening) - 5} more)" if len(loosening) > 5 else "")
    return without_loosening(values), [
        f"{path}: not trusted, so these entries that loosen the sandbox are ignored: {shown}. "
        f"Review the file, then run `gtd trust` to honour them."]
