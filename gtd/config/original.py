"""The original TypeScript gtd's configuration: its keys translated, its files found.

Every key any released version of the original accepted is either translated to gtd's own key
(with a warning that names the new one) or accepted and ignored (with a warning saying why). Its
files (.gtdrc, .gtdrc.yaml, gtd.config.*, package.json "gtd", ~/.gtdrc.json, ...) are read as
lower layers under gtd's own; YAML with yaml.safe_load, JS/TS never executed.
"""

from __future__ import annotations

import json
from pathlib import Path

from gtd.errors import ConfigError

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any

# The original's boundary levels -> gtd's levels (its README: restricted = read-only, no network;
# standard = read/write project files, network ok; elevated = beyond that).
LEVELS = {"restricted": "readonly", "standard": "network", "elevated": "full"}
ORIGINAL_PHASE_LEVELS = {"plan": "restricted", "build": "standard", "learn": "restricted"}

IGNORED = {
    "_comment": "a comment for people",
    "commitPrompt": "gtd writes its own commit messages (no model is asked)",
    "modelCommit": "gtd writes its own commit messages (no model is asked)",
    "agentPlan": "one agent CLI runs every phase (`provider`)",
    "agentBuild": "one agent CLI runs every phase (`provider`)",
    "agentLearn": "one agent CLI runs every phase (`provider`)",
    "modelExplore": "there is no explore phase (🧭 commits are read as the seed of a plan)",
    "vars": "the original's workflow templates have no equivalent",
    "modes": "the original's workflow modes have no equivalent",
}
ORIGINAL_KEYS = {"agent", "modelPlan", "modelBuild", "modelLearn", "testCmd", "agentInactivityTimeout",
                 "sandboxEnabled", "sandboxEscalationPolicy", "sandboxBoundaries", "sandboxApprovedEscalations", "approvedEscalations",
                 "file", *IGNORED}
SCHEMA_URL_PREFIX = "https://raw.githubusercontent.com/pmelab/gtd/"

PROJECT_FILES = (".gtdrc", ".gtdrc.yaml", ".gtdrc.yml", "gtd.config.json", "gtd.config.yaml", "gtd.config.yml")
SCRIPT_FILES = (".gtdrc.js", ".gtdrc.ts", ".gtdrc.mjs", ".gtdrc.cjs", ".gtdrc.mts", ".gtdrc.cts",
                "gtd.config.js", "gtd.config.ts", "gtd.config.mjs", "gtd.config.cjs", "gtd.config.mts", "gtd.config.cts")
USER_NAMES = (".gtdrc.json", ".gtdrc", ".gtdrc.yaml", ".gtdrc.yml")


def _merge_into(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = target
    for part in parents:
        node = node.setdefault(part, {})
    if isinstance(value, list) and isinstance(node.get(last), list):
        node[last] = node[last] + [v for v in value if v not in node[last]]
    else:
        node[last] = value


def _level(value: Any, source: str, key: str) -> str:
    if value not in LEVELS:
        raise ConfigError(source, key, f"unknown level {value!r} (the original gtd's levels are "
                          f"{', '.join(LEVELS)})")
    return LEVELS[value]


def translate(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], list[str]]:
    """The original's keys rewritten as gtd's, and a warning per key (`gtd config migrate` rewrites the file)."""
    if not any(key in raw for key in ORIGINAL_KEYS):
        return raw, []
    out = {key: value for key, value in raw.items() if key not in ORIGINAL_KEYS}
    warnings: list[str] = []
    hint = "run `gtd config migrate` to rewrite the file"

    def moved(old: str, new: str, value: Any, note: str = "") -> None:
        _merge_into(out, new, value)
        warnings.append(f"{source}: the original gtd's '{old}' is read as '{new}'{note}; {hint}")

    for key, value in raw.items():
        if key not in ORIGINAL_KEYS:
            continue
        if key in IGNORED:
            warnings.append(f"{source}: ignoring the original gtd's '{key}': {IGNORED[key]}")
        elif key == "agent":
            moved(key, "provider", value)
        elif key in ("modelPlan", "modelBuild", "modelLearn"):
            moved(key, f"models.{key[5:].lower()}", value)
        elif key == "testCmd":
            moved(key, "testCommand", value)
        elif key == "agentInactivityTimeout":
            moved(key, "timeouts.inactivitySeconds", value, " (0 still means off)" if value == 0 else "")
        elif key == "sandboxEnabled":
            moved(key, "sandbox.enabled", value)
        elif key == "sandboxEscalationPolicy":
            moved(key, "sandbox.escalationPolicy", value)
        elif key == "file":
            if value != "TODO.md":
                raise ConfigError(source, "file", f"gtd's plan file is always TODO.md, not {value!r}: rename the "
                                  "file to TODO.md and remove the key")
            warnings.append(f"{source}: ignoring the original gtd's 'file' (it is TODO.md, as always)")
        elif key == "sandboxBoundaries":
            _boundaries(value, source, out, warnings)
        else:  # sandboxApprovedEscalations, approvedEscalations
            _escalations(key, value, raw.get("sandboxBoundaries") or {}, source, out, warnings)
    if isinstance(out.get("$schema"), str) and out["$schema"].startswith(SCHEMA_URL_PREFIX):
        del out["$schema"]  # the original's schema would flag gtd's keys in an editor
    return out, warnings


def _boundaries(value: Any, source: str, out: dict[str, Any], warnings: list[str]) -> None:
    if not isinstance(value, dict):
        raise ConfigError(source, "sandboxBoundaries", "must be an object")
    for phase in ("plan", "build", "learn"):
        if phase in value:
            level = _level(value[phase], source, f"sandboxBoundaries.{phase}")
            _merge_into(out, f"sandbox.phases.{phase}", level)
            warnings.append(f"{source}: the original gtd's 'sandboxBoundaries.{phase}: {value[phase]}' is read as "
                            f"'sandbox.phases.{phase}: {level}'")
    filesystem = value.get("filesystem") or {}
    if filesystem.get("allowWrite"):
        _merge_into(out, "sandbox.levels.readwrite.writablePaths", list(filesystem["allowWrite"]))
        warnings.append(f"{source}: the original gtd's 'sandboxBoundaries.filesystem.allowWrite' is read as "
                        "'sandbox.levels.readwrite.writablePaths'")
    if filesystem.get("allowRead"):
        warnings.append(f"{source}: ignoring 'sandboxBoundaries.filesystem.allowRead': gtd lets the agent read "
                        "everything but the secrets listed in denyReadPaths")
    network = value.get("network") or {}
    if network.get("allowedDomains"):
        _merge_into(out, "sandbox.levels.network.allowDomains", list(network["allowedDomains"]))
        warnings.append(f"{source}: the original gtd's 'sandboxBoundaries.network.allowedDomains' is read as "
                        "'sandbox.levels.network.allowDomains'")
    unknown = set(value) - {"plan", "build", "learn", "filesystem", "network"}
    if unknown:
        raise ConfigError(source, f"sandboxBoundaries.{sorted(unknown)[0]}", "unknown key")


def _escalations(key: str, value: Any, boundaries: dict, source: str, out: dict[str, Any], warnings: list[str]) -> None:
    """An approved escalation `from -> to` raises every phase that runs at `from` to `to`, as a saved rule."""
    if not isinstance(value, list):
        raise ConfigError(source, key, "must be a list of {from, to}")
    for index, rule in enumerate(value):
        if not isinstance(rule, dict) or "from" not in rule or "to" not in rule:
            raise ConfigError(source, f"{key}[{index}]", "must be {\"from\": level, \"to\": level}")
        start, end = _level(rule["from"], source, f"{key}[{index}].from"), _level(rule["to"], source, f"{key}[{index}].to")
        for phase, default in ORIGINAL_PHASE_LEVELS.items():
            if boundaries.get(phase, default) == rule["from"]:
                _merge_into(out, f"sandbox.phases.{phase}", end)
                warnings.append(f"{source}: the original gtd's '{key}' entry {rule['from']} -> {rule['to']} is "
                                f"read as the saved rule 'sandbox.phases.{phase}: {end}' (was {start})")


# -- files --------------------------------------------------------------------------------------


def parse_text(path: Path, text: str) -> dict[str, Any]:
    """An original config file's content. YAML (a JSON superset) with safe_load: nothing is executed."""
    import yaml

    if path.name == "package.json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(str(path), "", f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
        section = data.get("gtd") if isinstance(data, dict) else None
        if section is None:
            return {}
        if not isinstance(section, dict):
            raise ConfigError(str(path), "gtd", "must be an object")
        return section
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "", f"invalid YAML/JSON: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", f"the top level must be an object, not {type(data).__name__}")
    return data


def refuse_script(path: Path) -> ConfigError:
    return ConfigError(str(path), "", "a JavaScript/TypeScript config is never executed by gtd: move its settings "
                       "into .gtdrc.json (`gtd config schema` lists the keys) and delete the file")


def user_candidates(home: Path, xdg_config: Path) -> list[Path]:
    """The original's user-level files, lowest priority first: HOME, then $XDG_CONFIG_HOME/gtd."""
    return [home / name for name in USER_NAMES] + [xdg_config / "gtd" / name for name in USER_NAMES]


def project_candidates(root: Path) -> list[Path]:
    return [root / name for name in PROJECT_FILES] + [root / "package.json"]


def migrated_text(path: Path, text: str) -> tuple[str, list[str]]:
    """The file rewritten with gtd's keys, in its own format (JSON keeps its style; YAML is re-dumped;
    package.json keeps everything but its "gtd" section). Unchanged text when there is nothing to do."""
    from gtd.config.files import compact_array_keys, detect_json_indent, dump_json

    if path.name == "package.json":
        document = json.loads(text)
        section = document.get("gtd") if isinstance(document, dict) else None
        if not isinstance(section, dict):
            return text, []
        new, warnings = translate(section, str(path))
        if new == section:
            return text, []
        document["gtd"] = new
        return dump_json(document, indent=detect_json_indent(text), compact_keys=compact_array_keys(text)) + "\n", warnings
    data = parse_text(path, text)
    new, warnings = translate(data, str(path))
    if new == data:
        return text, []
    if path.suffix == ".json":
        return dump_json(new, indent=detect_json_indent(text), compact_keys=compact_array_keys(text)) + "\n", warnings
    import yaml

    return yaml.safe_dump(new, sort_keys=False, allow_unicode=True), warnings + [
        f"{path}: rewritten as YAML; comments in it are not kept"]
