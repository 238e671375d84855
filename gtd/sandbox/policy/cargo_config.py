"""The cargo config the sandbox sees at ~/.cargo/config.toml: written by gtd from the person's, settings only.

`~/.cargo/config.toml` may hold `[registry] token`, `[registries.<name>] token`, credential providers and
`[env]` values, and HOME is hidden inside the sandbox (home_allow.py). gtd generates a file that keeps
what builds need (source replacement, registry indexes, `[net]`, `[build]`, `[target]`, profiles,
aliases) with credentials cut out of every URL, and nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path

# Tables copied as they are (no credential lives there).
SAFE_TABLES = ("net", "build", "target", "profile", "alias", "term", "cargo-new", "doc", "future-incompat-report",
               "install", "unstable", "resolver")
SAFE_SOURCE_KEYS = ("registry", "replace-with", "local-registry", "directory", "git", "branch", "tag", "rev")
SAFE_HTTP_KEYS = ("cainfo", "check-revoke", "multiplexing", "timeout", "low-speed-limit", "ssl-version", "debug")
HEADER = "# written by gtd from your cargo config: tokens, credential providers and [env] left out\n"


def cargo_config_file(home: Path, environ=None) -> Path | None:
    """The person's cargo config (CARGO_HOME or ~/.cargo: config.toml, else the legacy `config`), if any."""
    environ = os.environ if environ is None else environ
    cargo_home = Path(environ.get("CARGO_HOME") or Path(home) / ".cargo")
    for name in ("config.toml", "config"):
        if os.path.isfile(cargo_home / name):
            return cargo_home / name
    return None


def generated_cargo_config(path: Path) -> str | None:
    """The generated text for the person's config at `path` (None when it cannot be read as TOML)."""
    from gtd.sandbox.policy.home_allow import persisted

    return persisted("cargo-config", str(path), [str(path)], lambda: _generated(str(path)))


def _generated(path: str) -> str | None:
    import tomllib

    from gtd.sandbox.policy.registries import strip_credentials
    from gtd.workspace_files import read_metadata_text

    text = read_metadata_text(Path(path))
    try:
        data = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return None
    out: dict = {}
    for table in SAFE_TABLES:
        if isinstance(data.get(table), dict):
            out[table] = data[table]
    sources = {}
    for name, entry in (data.get("source") or {}).items():
        if isinstance(entry, dict):
            sources[name] = {k: strip_credentials(v) if isinstance(v, str) else v
                             for k, v in entry.items() if k in SAFE_SOURCE_KEYS}
    if sources:
        out["source"] = sources
    registries = {}
    for name, entry in (data.get("registries") or {}).items():
        if isinstance(entry, dict) and isinstance(entry.get("index"), str):
            registries[name] = {"index": strip_credentials(entry["index"]),
                                **({"protocol": entry["protocol"]} if isinstance(entry.get("protocol"), str) else {})}
    if registries:
        out["registries"] = registries
    registry = data.get("registry")
    if isinstance(registry, dict) and isinstance(registry.get("default"), str):
        out["registry"] = {"default": registry["default"]}
    http = data.get("http")
    if isinstance(http, dict):
        kept = {k: v for k, v in http.items() if k in SAFE_HTTP_KEYS}
        if kept:
            out["http"] = kept
    import tomlkit

    return HEADER + tomlkit.dumps(out)
