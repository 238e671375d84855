"""Resolve the effective config from its layers and remember where each value came from.

Layers, lowest to highest: built-in defaults < user config < project `.gtdrc.json` < CLI flags.
Every file is validated on its own first, so an error names the file that has it. The original
TypeScript gtd's files (gtd.config.original) are lower layers under gtd's own at each level:
its user files under the user config, its project files (and GTD_TEST_CMD) under .gtdrc.json.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd import workspace_files
from gtd.config.merge import leaf_keys, merge
from gtd.errors import ConfigError
from gtd.paths import PROJECT_CONFIG_NAME, find_repo_root, user_config_file
from gtd.record import record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any, Callable

    from gtd.config.schema import GtdConfig

    ProjectFilter = Callable[[Path, dict[str, Any]], tuple[dict[str, Any], list[str]]]

DEFAULTS = "defaults"
FLAGS = "command line"


@record
class ConfigLayer:
    name: str  # "defaults", "user", "project", "command line"
    path: Path | None
    values: dict[str, Any]  # canonical camelCase, only the keys this layer sets

    @property
    def label(self) -> str:
        return f"{self.name} ({self.path})" if self.path else self.name


class LoadedConfig:
    """The effective config and its layers. `values` (plain JSON, camelCase) needs no pydantic; the
    `config` model is built from them on first use, so commands that only print or hash the config
    stay fast."""

    def __init__(self, config: GtdConfig | None, layers: list[ConfigLayer], repo_root: Path | None,
                 warnings: list[str] | None = None, *, values: dict[str, Any] | None = None):
        if config is None and values is None:
            raise ValueError("LoadedConfig needs the validated config or its validated values")
        self._config = config
        self._values = values
        self.layers = layers
        self.repo_root = repo_root
        self.warnings = warnings if warnings is not None else []

    @property
    def config(self) -> GtdConfig:
        if self._config is None:
            from gtd.config.schema import GtdConfig

            self._config = GtdConfig.model_validate(self._values)
        return self._config

    @property
    def values(self) -> dict[str, Any]:
        """The effective config as written on disk (camelCase keys, JSON types, every key)."""
        if self._values is None:
            self._values = self.config.model_dump(by_alias=True, mode="json")
        return self._values

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


class _ProjectFiles:
    """The project directory's config files, each read once per load through gtd.workspace_files (never
    followed, capped): the cache key and the load see the same bytes, so an entry is keyed by exactly what
    was validated, even when a process (a sandboxed agent's) rewrites a file between two readings."""

    def __init__(self, root: Path):
        self.root = root
        self._found: dict[str, bytes | None | workspace_files.UnsafeWorkspacePath] = {}
        # the root's entries, listed once (most candidates are absent), case-folded: on a case-insensitive
        # filesystem (macOS) `.GTDRC.json` is `.gtdrc.json`, and read_bytes finds it by either name
        self._listed: frozenset[str] | None = None

    def content(self, name: str) -> bytes | None:
        """The file's bytes, None when absent; a symlink or special file is UnsafeWorkspacePath."""
        if name not in self._found:
            if self._listed is None:
                self._listed = frozenset(n.casefold() for n in workspace_files.names_in(self.root) or ())
            try:
                absent = os.sep not in name and name.casefold() not in self._listed and bool(self._listed)
                self._found[name] = None if absent else workspace_files.read_bytes(self.root, name)
            except workspace_files.UnsafeWorkspacePath as exc:
                self._found[name] = exc
        found = self._found[name]
        if isinstance(found, workspace_files.UnsafeWorkspacePath):
            raise found
        return found

    def text(self, name: str) -> str | None:
        """The file's text, None when absent; anything there that is not a regular UTF-8 file (a
        symlink, a FIFO) is an error naming it, never followed."""
        from gtd.config.files import decode_config_bytes

        try:
            return decode_config_bytes(self.root / name, self.content(name))
        except workspace_files.UnsafeWorkspacePath as exc:
            raise ConfigError(str(self.root / name), "", exc.reason) from None

    def there(self, name: str) -> bool:
        """Whether anything (not followed) is at the name."""
        try:
            return self.content(name) is not None
        except workspace_files.UnsafeWorkspacePath:
            return True


ORIGINAL_TEST_ENV = "GTD_TEST_CMD"


def _original_user_files() -> list[Path]:
    import os

    from gtd.config.original import user_candidates

    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return user_candidates(home, xdg)


def _original_layer(name: str, path: Path, project: _ProjectFiles | None) -> tuple[ConfigLayer, list[str]] | None:
    """One of the original gtd's files as a layer (None when absent), validated after translation; a
    project's (in `project`) as the load read it."""
    from gtd.config.files import read_config_text
    from gtd.config.original import parse_text
    from gtd.config.validation import strip_legacy_keys, validate_layer

    if project is not None:
        text = project.text(path.name)
    elif not path.is_file():
        return None
    else:
        text = read_config_text(path)
    if text is None:
        return None
    data = parse_text(path, text)
    if not data:
        return None
    raw, warnings = strip_legacy_keys(data, str(path))
    return ConfigLayer(name, path, validate_layer(raw, str(path))), warnings


def _refuse_scripts(project: _ProjectFiles) -> None:
    from gtd.config.original import SCRIPT_FILES, refuse_script

    for name in SCRIPT_FILES:
        if project.there(name):
            raise refuse_script(project.root / name)


def _file_layer(name: str, path: Path, text: str | None = None) -> tuple[ConfigLayer, list[str]]:
    """A gtd config file as a layer: read here (the user's), or its `text` as the load read it (the project's)."""
    from gtd.config.files import config_from_text, read_config_file
    from gtd.config.validation import strip_legacy_keys, validate_layer

    raw = read_config_file(path) if text is None else config_from_text(path, text)
    raw, warnings = strip_legacy_keys(raw, str(path))
    return ConfigLayer(name, path, validate_layer(raw, str(path))), warnings


def load_config(
    cwd: Path | None = None,
    flags: dict[str, Any] | None = None,
    *,
    project_filter: ProjectFilter | None = None,
    user_file: Path | None = None,
    cache_dir: Path | None = None,
) -> LoadedConfig:
    """The effective config. With `cache_dir`, a load whose inputs are byte-for-byte the same as an
    earlier valid one is answered from the cache without pydantic (see config/cache.py); a project
    filter is then only cached if it names the files it reads (`project_filter.cache_inputs()`).

    A load whose result does not depend on where the project is (see `_load`) is stored under a
    relocatable key: the same bytes in another directory (a fresh repository's first gtd command) are
    answered from it, its project layers' paths joined to this project's directory."""
    cwd = Path(cwd or Path.cwd())
    repo_root = find_repo_root(cwd)
    user_path = user_file or user_config_file()
    project_path = (repo_root or cwd) / PROJECT_CONFIG_NAME
    filter_inputs = getattr(project_filter, "cache_inputs", None)
    project = _ProjectFiles(project_path.parent)
    if cache_dir is None or (project_filter is not None and filter_inputs is None):
        return _load(repo_root, cwd, flags, project_filter, user_path, project_path, project)[0]
    from gtd.config import cache
    from gtd.config.original import SCRIPT_FILES, project_candidates

    root = project_path.parent
    outside = [user_path, *_original_user_files(), *(filter_inputs() if filter_inputs else [])]
    inputs = [*outside, project_path, *project_candidates(root), *(root / name for name in SCRIPT_FILES)]
    identity = {"repo": repo_root is not None, "flags": flags or {}, "env": os.environ.get(ORIGINAL_TEST_ENV),
                "filter": project_filter and f"{project_filter.__module__}.{project_filter.__qualname__}"}
    # Relocatable only while every file outside the project is named by its full path in the key.
    portable = None if any(root in path.parents for path in outside) else \
        cache.cache_key(inputs, identity, workspace=root, relocatable=True, read=project.content)
    entry = portable and cache.read(cache_dir, portable)
    exact = None
    if entry is None:
        identity.update(repo=str(repo_root), project=str(project_path.resolve()))
        exact = cache.cache_key(inputs, identity, workspace=root, read=project.content)
        entry = cache.read(cache_dir, exact)
    if entry is not None:
        layers = [ConfigLayer(name, (root / path if in_project else Path(path)) if path else None, values)
                  for name, path, values, in_project in entry["layers"]]
        return LoadedConfig(None, layers, repo_root, list(entry["warnings"]), values=entry["values"])
    loaded, anywhere = _load(repo_root, cwd, flags, project_filter, user_path, project_path, project)
    key = portable if portable and anywhere else exact
    stored = []
    for layer in loaded.layers:  # a relocatable entry names its project layers' files by name (joined when read)
        in_project = key == portable and layer.path is not None and layer.path.parent == root
        stored.append([layer.name, layer.path and (layer.path.name if in_project else str(layer.path)), layer.values,
                       in_project])
    cache.write(cache_dir, key, {"layers": stored, "warnings": loaded.warnings, "values": loaded.values})
    return loaded


def _load(repo_root: Path | None, cwd: Path, flags: dict[str, Any] | None, project_filter: ProjectFilter | None,
          user_path: Path, project_path: Path, project: _ProjectFiles) -> tuple[LoadedConfig, bool]:
    """The load, and whether its result holds for the same files in any project directory: no project
    file warned (warnings name the file) and the filter's answer did not depend on the file's path
    (`project_filter.ignores_path(values)`; a filter without it is taken to depend on it). The project
    layers' own paths are the only other place the directory appears."""
    import os

    from gtd.config.original import project_candidates
    from gtd.config.schema import GtdConfig
    from gtd.config.validation import validate_layer

    layers = [ConfigLayer(DEFAULTS, None, GtdConfig().model_dump(by_alias=True, mode="json"))]
    warnings: list[str] = []
    anywhere = True

    for path in _original_user_files():
        found_layer = _original_layer("user (original gtd)", path, None)
        if found_layer:
            layers.append(found_layer[0])
            warnings += found_layer[1]

    if user_path.exists():
        layer, found = _file_layer("user", user_path)
        layers.append(layer)
        warnings += found

    def project_layer(layer: ConfigLayer, found: list[str]) -> None:
        nonlocal anywhere
        if project_filter is not None:
            ignores_path = getattr(project_filter, "ignores_path", None)
            anywhere = anywhere and ignores_path is not None and ignores_path(layer.values)
            # a filter that decides by the file's content is given the bytes this load read, never a re-read
            content = {"content": project.content(layer.path.name)} if getattr(project_filter, "takes_content", False) else {}
            layer.values, filtered = project_filter(layer.path, layer.values, **content)
            found = found + filtered
        anywhere = anywhere and not found
        warnings.extend(found)
        layers.append(layer)

    root = project_path.parent
    _refuse_scripts(project)
    test_env = os.environ.get(ORIGINAL_TEST_ENV)
    if test_env:
        layers.append(ConfigLayer(f"environment ({ORIGINAL_TEST_ENV})", None, {"testCommand": test_env}))
        warnings.append(f"{ORIGINAL_TEST_ENV} (the original gtd's variable) is read as testCommand; set "
                        "`testCommand` in .gtdrc.json instead")
    for path in project_candidates(root):
        found_layer = _original_layer("project (original gtd)", path, project)
        if found_layer:
            project_layer(*found_layer)

    text = project.text(PROJECT_CONFIG_NAME)
    if text is not None:
        project_layer(*_file_layer("project", project_path, text))

    if flags:
        layers.append(ConfigLayer(FLAGS, None, validate_layer(flags, "command line")))

    merged: dict[str, Any] = {}
    for layer in layers:
        merged = merge(merged, layer.values)
    return LoadedConfig(GtdConfig.model_validate(merged), layers, repo_root, warnings), anywhere
