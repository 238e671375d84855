"""Where gtd keeps its files: user config, per-project state, audit log.

All of these are *protected*: the sandbox mounts them read-only (or hides them)
so an agent can never approve its own escalations or rewrite its history.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "gtd"
PROJECT_CONFIG_NAME = ".gtdrc.json"
USER_CONFIG_NAMES = ("config.toml", "config.json")


# platformdirs' user directories on Linux: (the XDG variable, the default under HOME).
_XDG = {"config": ("XDG_CONFIG_HOME", "~/.config"), "state": ("XDG_STATE_HOME", "~/.local/state"),
        "cache": ("XDG_CACHE_HOME", "~/.cache"), "data": ("XDG_DATA_HOME", "~/.local/share")}


def user_dir(kind: str) -> Path:
    """platformdirs.user_<kind>_dir("gtd") (kind: config, state, cache or data). On Linux the two ordinary
    cases are computed here, as every platformdirs 4 computes them: an absolute $XDG_<KIND>_HOME, else (it
    unset or empty) the default under an absolute $HOME. platformdirs and what it imports (tempfile,
    shutil, random: ~4 ms, issue 13) are loaded for anything else (a relative or blank XDG variable, no
    usable HOME, Android, macOS, Windows), which it decides as it always did."""
    import sys

    variable, default = _XDG[kind]
    xdg, home = os.environ.get(variable, ""), os.environ.get("HOME", "")
    if sys.platform == "linux" and not hasattr(sys, "getandroidapilevel") and \
            "ANDROID_DATA" not in os.environ and "ANDROID_ROOT" not in os.environ:
        if xdg.startswith("/"):
            return Path(os.path.join(xdg, APP))
        if xdg == "" and home.startswith("/"):
            return Path(os.path.join(os.path.expanduser(default), APP))
    import platformdirs

    return Path(getattr(platformdirs, f"user_{kind}_dir")(APP))


def user_config_dir() -> Path:
    return user_dir("config")


def user_config_file() -> Path:
    """The user config file: the first existing of config.toml / config.json (TOML by default)."""
    base = user_config_dir()
    for name in USER_CONFIG_NAMES:
        if (base / name).exists():
            return base / name
    return base / USER_CONFIG_NAMES[0]


def user_state_dir() -> Path:
    return user_dir("state")


def project_key(repo_root: Path) -> str:
    """A stable, filesystem-safe id for a repository (its resolved path, hashed)."""
    from gtd.digest import sha256

    resolved = str(Path(repo_root).resolve())
    digest = sha256(resolved.encode()).hexdigest()[:16]
    return f"{Path(resolved).name}-{digest}"


def project_state_dir(repo_root: Path) -> Path:
    """Per-project state (audit log, pending escalations): outside the repo, read-only inside the sandbox."""
    return user_state_dir() / "projects" / project_key(repo_root)


def config_cache_dir() -> Path:
    """Validated config loads (config/cache.py): in the state dir, so the sandbox cannot forge one."""
    return user_state_dir() / "cache" / "config"


def locks_dir() -> Path:
    return user_state_dir() / "locks"


def find_repo_root(start: Path) -> Path | None:
    """The nearest enclosing git work tree (a `.git` dir or file), without spawning git."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def agents_dir() -> Path:
    """Where the agent CLIs gtd runs keep their state, one dir per CLI (gtd.providers.agent_dirs): outside
    gtd's protected config and state, writable by the sandboxed CLI."""
    override = os.environ.get("GTD_AGENT_DIR")  # tests and CI keep it inside their temp HOME anyway
    return Path(override) if override else user_dir("data") / "agents"
