"""Trust pinning: a project config that loosens the sandbox counts only once the user trusts it.

A freshly cloned repository must not be able to grant its agent more than the defaults.
Loosening entries in `.gtdrc.json` (extra allowed domains or writable paths, a phase at a
higher level, the sandbox disabled, the reviewer model switched on or given rules) are honoured only while the file's exact content
matches the sha256 the user pinned with `gtd trust`, or when the user approved that very
entry at an escalation prompt. Tightening is always honoured.

The pins live in the user's state directory, which the sandbox cannot write.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from filelock import FileLock

from gtd import workspace_files
from gtd.config.schema import GtdConfig, Level
from gtd.config.writer import atomic_write
from gtd.paths import PROJECT_CONFIG_NAME, user_state_dir

TRUST_FILE = "trust.json"
LOOSENING_LISTS = {"allowDomains": "allow_domains", "writablePaths": "writable_paths", "hostLoopbackPorts": "host_loopback_ports"}
# `sandbox.<key>` lists every entry of which loosens: credentials or the person's variables let into the sandbox.
LOOSENING_SANDBOX_LISTS = ("registryCredentials", "passEnv", "readPaths")
# Choosing the agent CLI or its model decides which of the person's API keys and cloud credentials enter
# the sandbox and which model hosts it reaches (each CLI's CREDENTIAL_ENV, providers/cli_models.py,
# cloud_credentials.py): a project file's `provider` or `models.<phase>` is loosening, and until it is
# trusted the person's own choice stands. The scripted provider runs no model and gets no credential.
PROVIDER_NEEDS_NOTHING = ("scripted",)


def file_digest(path: Path) -> str:
    """sha256 of a project config file (at its repository's root), read through gtd.workspace_files."""
    data = workspace_files.read_bytes(path.parent, path.name)
    if data is None:
        raise FileNotFoundError(f"{path} does not exist")
    return content_digest(data)


def content_digest(data: bytes) -> str:
    """What the trust store pins: sha256 of the file's bytes, in hex."""
    from gtd.digest import sha256

    return sha256(data).hexdigest()


def entry(key: str, value: Any) -> str:
    """One loosening entry as people (and the trust store) read it: `sandbox.phases.build: network`."""
    if isinstance(value, bool):
        value = str(value).lower()
    return f"{key}: {value}"


class TrustStore:
    """Per project config file (by absolute path): the pinned sha256 of the content the user
    trusted, and the loosening entries the user approved one by one at a prompt."""

    def __init__(self, directory: Path | None = None):
        directory = directory or user_state_dir()
        self.path = directory / TRUST_FILE
        self._lock_path = directory / f"{TRUST_FILE}.lock"

    def _lock(self) -> FileLock:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self._lock_path), timeout=30)

    def _read(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}  # a damaged store trusts nothing (fails closed)
        return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}

    def _update(self, config_file: Path, change) -> dict[str, Any]:
        with self._lock():
            pins = self._read()
            record = pins.setdefault(str(config_file.resolve()), {})
            change(record)
            if not record:
                del pins[str(config_file.resolve())]
            atomic_write(self.path, json.dumps(pins, indent=2, sort_keys=True) + "\n")
            return record

    def record(self, config_file: Path) -> dict[str, Any]:
        return self._read().get(str(config_file.resolve()), {})

    def pinned(self, config_file: Path) -> str | None:
        return self.record(config_file).get("sha256")

    def approved(self, config_file: Path) -> set[str]:
        return set(self.record(config_file).get("approved", []))

    def is_trusted(self, config_file: Path) -> bool:
        """The file's exact current content is what the user trusted."""
        pinned = self.pinned(config_file)
        return pinned is not None and workspace_files.is_file(config_file.parent, config_file.name) \
            and pinned == file_digest(config_file)

    def trust(self, config_file: Path, digest: str | None = None) -> str:
        digest = digest or file_digest(config_file)
        self._update(config_file, lambda record: record.__setitem__("sha256", digest))
        return digest

    def approve_entry(self, config_file: Path, loosening: str) -> None:
        """The user approved this one entry at a prompt: honour it whatever else the file holds."""
        def add(record):
            record["approved"] = sorted(set(record.get("approved", [])) | {loosening})
        self._update(config_file, add)

    def revoke(self, config_file: Path) -> bool:
        found = bool(self.record(config_file))
        self._update(config_file, lambda record: record.clear())
        return found


def loosening_entries(values: dict[str, Any]) -> list[str]:
    """What in a project layer loosens the sandbox beyond the built-in defaults, as `key: value`."""
    defaults = GtdConfig().sandbox
    sandbox = values.get("sandbox") or {}
    found = [entry(key, False) for key in _switched_off(values)]
    for phase, level in (sandbox.get("phases") or {}).items():
        if Level(level).rank > getattr(defaults.phases, phase).rank:
            found.append(entry(f"sandbox.phases.{phase}", Level(level).value))
    for level, rules in (sandbox.get("levels") or {}).items():
        for key, field in LOOSENING_LISTS.items():
            default_values = getattr(getattr(defaults.levels, level), field)
            for item in rules.get(key) or []:
                if item not in default_values:
                    found.append(entry(f"sandbox.levels.{level}.{key}", item))
    for key, value in (sandbox.get("limits") or {}).items():
        if _raises_limit(key, value):
            found.append(entry(f"sandbox.limits.{key}", value))
    for key in LOOSENING_SANDBOX_LISTS:
        found += [entry(f"sandbox.{key}", item) for item in sandbox.get(key) or []]
    if sandbox.get("escalationPolicy") == "auto":  # a model, not the person, would settle requests
        found.append(entry("sandbox.escalationPolicy", "auto"))
    if sandbox.get("backend") == "landlock":  # the weaker backend where bwrap works (docs/landlock-backend.md)
        found.append(entry("sandbox.backend", "landlock"))
    if sandbox.get("claudeLogin") == "inside":  # the person's claude login readable inside the sandbox
        found.append(entry("sandbox.claudeLogin", "inside"))
    found += [entry("sandbox.reviewer.rules", rule) for rule in _reviewer_rules(sandbox)]
    return _choices(values) + found


def _reviewer_rules(sandbox: dict[str, Any]) -> list:
    """`sandbox.reviewer.rules`: every line steers the reviewer that may allow requests, so each loosens."""
    reviewer = sandbox.get("reviewer")
    rules = reviewer.get("rules") if isinstance(reviewer, dict) else None
    return list(rules) if isinstance(rules, list) else []


def layer_switches(model=None, prefix: str = "") -> list[str]:
    """Every on/off switch of a protection layer in the schema (a boolean that is on by default, e.g.
    `sandbox.enabled`), as a dotted camelCase key: a project file turning one off loosens the sandbox."""
    from pydantic import BaseModel

    model = model or GtdConfig
    found = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        if field.annotation is bool and field.default is True:
            found.append(key)
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            found += layer_switches(field.annotation, key + ".")
    return found


def _switched_off(values: dict[str, Any]) -> list[str]:
    """The layer switches these values turn off."""
    found = []
    for key in layer_switches():
        node: Any = values
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is False:
            found.append(key)
    return found


def _choices(values: dict[str, Any]) -> list[str]:
    """The agent CLI and the models these values choose, as entries (see PROVIDER_NEEDS_NOTHING)."""
    provider = values.get("provider")
    found = [entry("provider", provider)] if provider and provider not in PROVIDER_NEEDS_NOTHING else []
    return found + [entry(f"models.{phase}", model) for phase, model in (values.get("models") or {}).items() if model]


def _raises_limit(key: str, value: Any) -> bool:
    """A resource limit above the default, or off (`0`/`none`). Invalid values are left to validation."""
    from gtd.config.memory_size import parse_memory

    default = getattr(GtdConfig().sandbox.limits, key, None)
    try:
        if key == "processes":
            return isinstance(value, int) and (value == 0 or value > default)
        if key == "memory":
            limit = parse_memory(value)
            return limit is None or limit > parse_memory(default)
    except (TypeError, ValueError):
        pass
    return False


def without_loosening(values: dict[str, Any], keep: set[str] = frozenset()) -> dict[str, Any]:
    """The layer with every loosening entry removed except those in `keep`; tightening and unrelated keys kept."""
    kept = copy.deepcopy(values)
    chosen = _choices(kept)
    if entry("provider", kept.get("provider")) in chosen and entry("provider", kept["provider"]) not in keep:
        del kept["provider"]
    for phase, model in list((kept.get("models") or {}).items()):
        if entry(f"models.{phase}", model) in chosen and entry(f"models.{phase}", model) not in keep:
            del kept["models"][phase]
    for key in _switched_off(kept):
        if entry(key, False) not in keep:
            *parents, last = key.split(".")
            node = kept
            for part in parents:
                node = node[part]
            del node[last]
    sandbox = kept.get("sandbox")
    if not sandbox:
        return kept
    defaults = GtdConfig().sandbox
    phases = sandbox.get("phases") or {}
    for phase, level in list(phases.items()):
        raised = Level(level).rank > getattr(defaults.phases, phase).rank
        if raised and entry(f"sandbox.phases.{phase}", Level(level).value) not in keep:
            del phases[phase]
    for level, rules in (sandbox.get("levels") or {}).items():
        for key, field in LOOSENING_LISTS.items():
            if key in rules:
                default_values = getattr(getattr(defaults.levels, level), field)
                rules[key] = [item for item in rules[key] if item in default_values
                              or entry(f"sandbox.levels.{level}.{key}", item) in keep]
    limits = sandbox.get("limits") or {}
    for key, value in list(limits.items()):
        if _raises_limit(key, value) and entry(f"sandbox.limits.{key}", value) not in keep:
            del limits[key]
    for key in LOOSENING_SANDBOX_LISTS:
        if key in sandbox:
            sandbox[key] = [item for item in sandbox[key] or [] if entry(f"sandbox.{key}", item) in keep]
    if sandbox.get("escalationPolicy") == "auto" and entry("sandbox.escalationPolicy", "auto") not in keep:
        del sandbox["escalationPolicy"]
    if sandbox.get("backend") == "landlock" and entry("sandbox.backend", "landlock") not in keep:
        del sandbox["backend"]
    if sandbox.get("claudeLogin") == "inside" and entry("sandbox.claudeLogin", "inside") not in keep:
        del sandbox["claudeLogin"]
    if _reviewer_rules(sandbox):
        sandbox["reviewer"]["rules"] = [rule for rule in sandbox["reviewer"]["rules"]
                                        if entry("sandbox.reviewer.rules", rule) in keep]
    return kept


def filter_ignores_path(values: dict[str, Any]) -> bool:
    """Whether filter_untrusted_project answers the same for these values whatever the file's path:
    nothing in them loosens the sandbox, so the trust store (kept per path) is not consulted."""
    return not loosening_entries(values)


def filter_untrusted_project(path: Path, values: dict[str, Any], content: bytes | None = None) -> tuple[dict[str, Any], list[str]]:
    """The config loader's project filter: drop loosening from an untrusted (or changed) file,
    except the entries the user approved one by one. `content`: the bytes the loader read and took
    `values` from; trust is decided on them (a re-read could find other bytes than the ones in use)."""
    if filter_ignores_path(values):
        return values, []
    loosening = loosening_entries(values)
    store = TrustStore()
    pinned = store.pinned(path)
    if pinned is not None and (pinned == content_digest(content) if content is not None and path.name == PROJECT_CONFIG_NAME
                               else store.is_trusted(path)):
        return values, []
    approved = store.approved(path)
    ignored = [item for item in loosening if item not in approved]
    if not ignored:
        return values, []
    shown = "; ".join(ignored[:5]) + (f" (+{len(ignored) - 5} more)" if len(ignored) > 5 else "")
    changed = " (it changed since you trusted it)" if pinned else ""
    if any(item.startswith(("provider: ", "models.")) for item in ignored):
        shown += " (your own agent and model choice stands: the choice decides which credentials enter)"
    how = ("Review the file, then run `gtd trust` to honour them." if path.name == PROJECT_CONFIG_NAME else
           f"Only {PROJECT_CONFIG_NAME} can be trusted: move them there, review it, then run `gtd trust`.")
    return without_loosening(values, approved), [
        f"{path}: not trusted{changed}, so these entries that loosen the sandbox are ignored: {shown}. {how}"]


filter_untrusted_project.takes_content = True  # config/loader.py passes the bytes it read
