"""Where gtd keeps its files: user config, per-project state, audit log.

All of these are *protected*: the sandbox mounts them read-only (or hides them)
so an agent can never approve its own escalations or rewrite its history.
"""

from __future__ import annotations

from pathlib import Path

APP = "gtd"
PROJECT_CONFIG_NAME = ".gtdrc.json"
USER_CONFIG_NAMES = ("config.toml", "config.json")


def user_config_dir() -> Path:
    import platformdirs  # here: every command imports this module, few need the directories

    return Path(platformdirs.user_config_dir(APP))


def user_config_file() -> Path:
    """The user config file: the first existing of config.toml / config.json (TOML by default)."""
    base = user_config_dir()
    for name in USER_CONFIG_NAMES:
        if (base / name).exists():
            return base / name
    return base / USER_CONFIG_NAMES[0]


def user_state_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir(APP))


def project_key(repo_root: Path) -> str:
    """A stable, filesystem-safe id for a repository (its resolved path, hashed)."""
    import hashlib

    resolved = str(Path(repo_root).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    return f"{Path(resolved).name}-{digest}"


def project_state_dir(repo_root: Path) -> Path:
    """Per-project state (audit log, pending escalations): outside the repo, outside the sandbox's reach."""
    return user_state_dir() / "projects" / project_key(repo_root)


def config_cache_dir() -> Path:
    """Validated config loads (config/cache.py): in the state dir, so the sandbox cannot forge one."""
    return user_state_dir() / "cache" / "config"


def locks_dir() -> Path:
    return user_state_dir() / "locks"
