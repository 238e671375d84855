"""Resolve the effective config from its layers and remember where each value came from.

Layers, lowest to highest: built-in defaults < user config < project `.gtdrc.json` < CLI flags.
Every file is validated on its own first, so an error names the file that has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from gtd.config.files import read_config_file
from gtd.config.merge import leaf_keys, merge
from gtd.config.schema import GtdConfig
from gtd.config.validation import strip_legacy_keys, validate_layer
from gtd.paths import PROJECT_CONFIG_NAME, user_config_file

ProjectFilter = Callable[[Path, dict[str, Any]], tuple[dict[str, Any], list[str]]]

DEFAULTS = "defaults"
FLAGS = "command line"


@dataclass
class ConfigLayer:
    name: str  # "defaults", "user", "project", "command line"
    path: Path | None
    values: dict[str, Any]  # canonical camelCase, only the keys this layer sets

    @property
    def label(self) -> str:
        return f"{self.name} ({self.path})" if self.path else self.name


@dataclass
class LoadedConfig:
    config: GtdConfig
    layers: list[ConfigLayer]
    repo_root: Path | None
    warnings: list[str] = field(default_factory=list)

    @property
    def files(self) -> list[Path]:
        return [layer.path for layer in self.layers if layer.path]

    def origins(self) -> dict[str, str]:
        """Dotted key -> the layer(s) its effective value came from (lists name every contributor)."""
        found: dict[str, list[str]] = {}
        empty: set[str] = set()  # list keys whose contributors so far added nothing
        for layer in self.layers:
            for key, value in leaf_keys(layer.values).items():
                if isinstance(value, list) and key in found and key not in empty:
                    if value:
                        found[key].append(layer.label)
                elif not (isinstance(value, list) and not value and key in found):
                    found[key] = [layer.label]
                    empty.discard(key)
                    if isinstance(value, list) and not value:
                        empty.add(key)
        return {key: " + ".join(labels) for key, labels in found.items()}

    def project_config_path(self) -> Path:
        return (self.repo_root or Path.cwd()) / PROJECT_CONFIG_NAME


def find_repo_root(start: Path) -> Path | None:
    """The nearest enclosing git work tree (a `.git` dir or file), without spawning git."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _file_layer(name: str, path: Path) -> tuple[ConfigLayer, list[str]]:
    raw, warnings = strip_legacy_keys(read_config_file(path), str(path))
    return ConfigLayer(name, path, validate_layer(raw, str(path))), warnings


def load_config(
    cwd: Path | None = None,
    flags: dict[str, Any] | None = None,
    *,
    project_filter: ProjectFilter | None = None,
    user_file: Path | None = None,
) -> LoadedConfig:
    cwd = Path(cwd or Path.cwd())
    repo_root = find_repo_root(cwd)
    layers = [ConfigLayer(DEFAULTS, None, GtdConfig().model_dump(by_alias=True, mode="json"))]
    warnings: list[str] = []

    user_path = user_file or user_config_file()
    if user_path.exists():
        layer, found = _file_layer("user", user_path)
        layers.append(layer)
        warnings += found

    project_path = (repo_root or cwd) / PROJECT_CONFIG_NAME
    if project_path.exists():
        layer, found = _file_layer("project", project_path)
        warnings += found
        if project_filter is not None:
            layer.values, filtered = project_filter(project_path, layer.values)
            warnings += filtered
        layers.append(layer)

    if flags:
        layers.append(ConfigLayer(FLAGS, None, validate_layer(flags, "command line")))

    merged: dict[str, Any] = {}
    for layer in layers:
        merged = merge(merged, layer.values)
    return LoadedConfig(GtdConfig.model_validate(merged), layers, repo_root, warnings)
