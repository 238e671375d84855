"""Package caches inside the sandbox: reads hit the user's cache, writes never reach it.

At `readwrite` and above, each package manager's cache (pip, uv, npm, pnpm, yarn, cargo, go,
gradle, maven, ccache) is made writable through a copy-on-write **overlay**: the user's cache
is the lower layer, and a per-project upper layer lives in gtd's state dir (read-only to the
agent everywhere else). So an offline build reads what the user already downloaded, a download
at `network` is kept for this project's next run, and nothing the agent writes can poison a
cache that another project (or the person's own shell) uses.

How it is mounted (bubblewrap 0.8 has no `--overlay`): once per session a small *holder* is
started in its own mount namespace (inside a user namespace unless gtd runs as root) with
util-linux `unshare`; it mounts every overlay with one `mount -a -T <fstab>` and waits on its
stdin. Each sandboxed command then starts bwrap through `nsenter` into that namespace, where
`--ro-bind / /` sees the overlays and a `--bind` of each cache makes it writable. The holder
exits when gtd closes its stdin (or dies).

The **cache home** itself (`$XDG_CACHE_HOME`, else `~/.cache`) is one more overlay, so every other
tool that keeps a cache there (node-gyp, puppeteer, playwright, pre-commit, poetry, huggingface, …)
can write too, and a dir that does not exist on the host can be created inside. The package caches
that resolve inside it are folded into it (one mount, no overlay stacked on an overlay); one that
resolves elsewhere (a symlink to /data/pip, a moved PIP_CACHE_DIR) keeps its own overlay. Protected
and hidden paths under the cache home are mounted over it read-only / hidden as anywhere else in a
writable root (bwrap.py). The cache home is left read-only when it is, or is under, a protected or
hidden path, holds the workspace, gtd's state dir or another writable path (whose writes must reach
the host, not a layer).

Where overlays cannot be mounted, each tool that has a cache variable is pointed at a
gtd-owned per-project cache dir instead (reads then miss the user's cache), XDG_CACHE_HOME too
(the real cache home then stays read-only); `gtd doctor` and `gtd sandbox explain` say which mode
is in use.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from gtd.record import record
from gtd.sandbox.policy.containment import inside
from gtd.which import which

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable, Mapping

# Characters that overlayfs options or an fstab line cannot carry safely: such a cache is left alone.
_UNSAFE = set(",:\\ \t\n\"'#=")


@record(frozen=True)
class ToolCache:
    tool: str  # "pip"
    path: Path  # the user's cache dir (the overlay's lower layer)
    env: str | None = None  # the variable that points the tool elsewhere (fallback mode)
    origin: str = "default"  # where the location came from: "default" or the variable that set it

    @property
    def key(self) -> str:
        """A file-name-safe id, unique per cache ("npm", "cargo-registry")."""
        return self.tool


def _first(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    for name in names:
        value = environ.get(name)
        if value:
            return name, value
    return None


def known_caches(home: Path, environ: Mapping[str, str] | None = None, workspace: Path | None = None) -> list[ToolCache]:
    """Every package manager's cache location, honouring the variables that move it (and the config
    files that do, but not one that resolves into `workspace`: see _configured_cache_dirs)."""
    environ = os.environ if environ is None else environ
    xdg_cache = Path(environ.get("XDG_CACHE_HOME") or home / ".cache")
    xdg_data = Path(environ.get("XDG_DATA_HOME") or home / ".local/share")
    found: list[ToolCache] = []

    configured = _configured_cache_dirs(home, environ, workspace)

    def add(tool: str, default: Path, *names: str, env: str | None = None) -> None:
        """The tool's variable wins, then its own config file's setting, then its default."""
        hit = _first(environ, *names)
        if hit:
            path, origin = Path(os.path.expanduser(hit[1])), hit[0]
        else:
            path, origin = configured.get(tool, (default, "default"))
        if path.is_absolute():
            found.append(ToolCache(tool, Path(os.path.normpath(path)), env, origin))

    add("pip", xdg_cache / "pip", "PIP_CACHE_DIR", env="PIP_CACHE_DIR")
    add("uv", xdg_cache / "uv", "UV_CACHE_DIR", env="UV_CACHE_DIR")
    add("npm", home / ".npm", "npm_config_cache", "NPM_CONFIG_CACHE", env="npm_config_cache")
    add("pnpm-store", xdg_data / "pnpm" / "store", "npm_config_store_dir", "PNPM_STORE_DIR", env="npm_config_store_dir")
    add("pnpm", xdg_cache / "pnpm", "npm_config_cache_dir", env="npm_config_cache_dir")
    add("yarn", xdg_cache / "yarn", "YARN_CACHE_FOLDER", env="YARN_CACHE_FOLDER")
    add("yarn-berry", home / ".yarn" / "berry", "YARN_GLOBAL_FOLDER", env="YARN_GLOBAL_FOLDER")
    cargo_home = Path(environ.get("CARGO_HOME") or home / ".cargo")
    add("cargo-registry", cargo_home / "registry")
    add("cargo-git", cargo_home / "git")
    gopath = (environ.get("GOPATH") or str(home / "go")).split(os.pathsep)[0]
    add("go-mod", Path(gopath) / "pkg" / "mod", "GOMODCACHE", env="GOMODCACHE")
    add("go-build", xdg_cache / "go-build", "GOCACHE", env="GOCACHE")
    gradle_home = Path(environ.get("GRADLE_USER_HOME") or home / ".gradle")
    add("gradle", gradle_home / "caches")
    add("gradle-wrapper", gradle_home / "wrapper")
    add("maven", home / ".m2" / "repository")
    add("bun", home / ".bun" / "install" / "cache", "BUN_INSTALL_CACHE_DIR", env="BUN_INSTALL_CACHE_DIR")
    add("deno", xdg_cache / "deno", "DENO_DIR", env="DENO_DIR")
    add("composer", xdg_cache / "composer", "COMPOSER_CACHE_DIR", env="COMPOSER_CACHE_DIR")
    add("nuget", home / ".nuget" / "packages", "NUGET_PACKAGES", env="NUGET_PACKAGES")
    ccache_default = xdg_cache / "ccache" if not (home / ".ccache").is_dir() else home / ".ccache"
    add("ccache", ccache_default, "CCACHE_DIR", env="CCACHE_DIR")
    return found


def _expand(value: str, home: Path) -> Path:
    value = value.strip().strip('"')
    return home / value[2:] if value.startswith("~/") else Path(value)


def _configured_cache_dirs(home: Path, environ: Mapping[str, str],
                           workspace: Path | None = None) -> dict[str, tuple[Path, str]]:
    """Cache dirs set in the tools' own user config, with where each was set: pip.conf `cache-dir`, uv.toml
    `cache-dir`, ~/.npmrc `cache`, Go's env file (`go env -w GOMODCACHE/GOCACHE/GOPATH`), ~/.m2/settings.xml
    `<localRepository>` and ccache.conf `cache_dir`. A variable the tool reads overrides each of them.
    A file in `workspace`, or reached through a link there, is not read (an activated project venv's
    pip.conf, a relative PIP_CONFIG_FILE): the agent writes it, and gtd creates a missing cache dir on the
    host and makes it a writable layer inside, so it would choose where (as registries.user_registries)."""
    from gtd.sandbox.policy import registries as reg
    from gtd.workspace_files import read_metadata_text

    found: dict[str, tuple[Path, str]] = {}
    for path in reg.pip_config_files(home, environ):  # later files win, as in pip
        text = read_metadata_text(path, untrusted=workspace)
        match = re.search(r"^\s*cache[-_]dir\s*[=:]\s*(\S+)", text or "", re.MULTILINE)
        if match:
            found["pip"] = (_expand(match.group(1), home), f"{_short(path, home)} cache-dir")
    uv_path = reg._xdg_config(home, environ) / "uv" / "uv.toml"
    uv_toml = reg._toml(uv_path, workspace) or {}
    if isinstance(uv_toml.get("cache-dir"), str):
        found["uv"] = (_expand(uv_toml["cache-dir"], home), f"{_short(uv_path, home)} cache-dir")
    npmrc = reg.npmrc_path(home, environ)
    for key, value in reg._npmrc_items(npmrc, workspace):
        if key == "cache" and value:
            found["npm"] = (_expand(value.replace("${HOME}", str(home)), home), "~/.npmrc cache")
    go_env_path = reg._go_env_path(home, environ)
    go_env = reg._go_env_file(home, environ, workspace)
    where = _short(go_env_path, home)
    if go_env.get("GOMODCACHE"):
        found["go-mod"] = (_expand(go_env["GOMODCACHE"], home), f"{where} GOMODCACHE")
    elif go_env.get("GOPATH") and not environ.get("GOPATH"):
        found["go-mod"] = (_expand(go_env["GOPATH"].split(os.pathsep)[0], home) / "pkg" / "mod", f"{where} GOPATH")
    if go_env.get("GOCACHE"):
        found["go-build"] = (_expand(go_env["GOCACHE"], home), f"{where} GOCACHE")
    local_repository = reg.maven_local_repository(home, workspace)
    if local_repository:
        found["maven"] = (_expand(local_repository.replace("${user.home}", str(home)), home),
                          "~/.m2/settings.xml localRepository")
    ccache_conf = _ccache_config(home, environ)
    text = read_metadata_text(ccache_conf, untrusted=workspace) if ccache_conf else None
    match = re.search(r"^\s*cache_dir\s*=\s*(\S+)", text or "", re.MULTILINE)
    if match:
        found["ccache"] = (_expand(match.group(1).replace("$HOME", str(home)), home), f"{_short(ccache_conf, home)} cache_dir")
    return {k: v for k, v in found.items() if v[0].is_absolute()}


def _ccache_config(home: Path, environ: Mapping[str, str]) -> Path | None:
    """ccache's own config file: CCACHE_CONFIGPATH, else ccache.conf in ~/.ccache (when that is the cache dir)
    or in $XDG_CONFIG_HOME/ccache."""
    if environ.get("CCACHE_CONFIGPATH"):
        return Path(environ["CCACHE_CONFIGPATH"])
    if environ.get("CCACHE_DIR"):
        return None  # the cache dir is set: its location cannot come from a config file
    legacy = home / ".ccache"
    if legacy.is_dir():
        return legacy / "ccache.conf"
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "ccache" / "ccache.conf"


def _short(path: Path, home: Path) -> str:
    """A config file's name as the person knows it (~/... under HOME)."""
    text, root = str(path), str(home).rstrip("/") + "/"
    return "~/" + text[len(root):] if text.startswith(root) else text


# The executable whose presence makes a missing cache worth creating (it would create it itself).
_TOOL_EXECUTABLES = {
    "pip": ("pip", "pip3"), "uv": ("uv",), "npm": ("npm",), "pnpm-store": ("pnpm",), "pnpm": ("pnpm",),
    "yarn": ("yarn",), "yarn-berry": ("yarn",), "cargo-registry": ("cargo",), "cargo-git": ("cargo",),
    "go-mod": ("go",), "go-build": ("go",), "gradle": ("gradle",), "gradle-wrapper": ("gradle",),
    "maven": ("mvn",), "ccache": ("ccache",), "bun": ("bun",), "deno": ("deno",), "composer": ("composer",),
    "nuget": ("dotnet", "nuget"),
}

# Variables that name where the tools keep caches and config: passed into the sandbox so a tool
# finds the same places inside as outside (they hold paths, never credentials).
LOCATION_VARS = (
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "PIP_CACHE_DIR", "UV_CACHE_DIR", "npm_config_cache",
    "NPM_CONFIG_CACHE", "npm_config_store_dir", "PNPM_STORE_DIR", "npm_config_cache_dir", "PNPM_HOME",
    "YARN_CACHE_FOLDER", "YARN_GLOBAL_FOLDER", "CARGO_HOME", "RUSTUP_HOME", "GOPATH", "GOMODCACHE", "GOCACHE",
    "GRADLE_USER_HOME", "CCACHE_DIR", "JAVA_HOME", "BUN_INSTALL_CACHE_DIR", "DENO_DIR", "COMPOSER_CACHE_DIR",
    "NUGET_PACKAGES",
)


def _meets(paths) -> "Callable[[Path], bool]":
    """`lambda p: any(inside(p, h) or inside(h, p) for h in paths)` by set lookups: the hidden and
    protected paths number hundreds, the caches a few dozen, and this runs at every session start."""
    exact = {str(h).rstrip("/") or "/" for h in paths}
    holding: set[str] = set()  # every path in `exact` and each of its ancestors
    for h in exact:
        while h not in holding:
            holding.add(h)
            h = os.path.dirname(h)

    def meets(p: Path) -> bool:
        text = str(p).rstrip("/") or "/"
        if text in holding:
            return True  # p is one of them or holds one
        while True:
            parent = os.path.dirname(text)
            if parent == text:
                return False
            if parent in exact:
                return True  # p is below one of them
            text = parent
    return meets


CACHE_HOME = "cache-home"  # the tool name of the cache home's own entry


def cache_home(home: Path, environ: Mapping[str, str] | None = None) -> ToolCache:
    """The XDG cache home as one cache (its fallback variable is XDG_CACHE_HOME itself)."""
    environ = os.environ if environ is None else environ
    value = environ.get("XDG_CACHE_HOME")
    path = Path(value) if value and value.startswith("/") else home / ".cache"
    return ToolCache(CACHE_HOME, Path(os.path.normpath(path)), "XDG_CACHE_HOME",
                     "XDG_CACHE_HOME" if value and value.startswith("/") else "default")


def _cache_home_usable(cache: ToolCache, workspace: Path, hidden, writable) -> bool:
    """Whether the cache home may be an overlay: it may *hold* protected and hidden paths (mounted over
    it), but not be one or lie under one; and it must not hold the workspace, gtd's state dir (the
    layers would sit in their own lower layer) or another writable path (its writes must reach the
    host, and bwrap would bind the overlay's view instead)."""
    from gtd import paths

    real = Path(os.path.realpath(cache.path))
    if _UNSAFE & set(str(cache.path) + str(real)):
        return False
    for p in (cache.path, real):
        if any(inside(p, h) for h in hidden):
            return False
        keep = (workspace, paths.user_state_dir(), *writable)
        if any(inside(k, p) or inside(Path(os.path.realpath(k)), p) or inside(p, k) for k in keep):
            return False
    return True


def policy_caches(home: Path, workspace: Path, hidden: tuple[Path, ...] | list[Path],
                  environ: Mapping[str, str] | None = None,
                  writable: tuple[Path, ...] | list[Path] = ()) -> tuple[ToolCache, ...]:
    """The caches a writable level gets: the cache home (see _cache_home_usable), then each package
    manager's cache that exists, or whose tool is installed. A cache inside the workspace is writable
    anyway; one that is (or is under) a hidden path stays hidden; a path overlayfs cannot name is left
    as it is (read-only). Linux only: on macOS caches stay read-only."""
    if not sys.platform.startswith("linux"):
        return ()
    chosen: list[ToolCache] = []
    seen: set[Path] = set()
    home_cache = cache_home(home, environ)
    if _cache_home_usable(home_cache, workspace, hidden, writable):
        chosen.append(home_cache)
        seen.add(home_cache.path)
    meets_hidden = _meets(hidden)
    for cache in known_caches(home, environ, workspace):
        spellings = {cache.path, Path(os.path.realpath(cache.path))}  # a symlinked cache is judged where it leads
        if cache.path in seen or any(inside(p, workspace) or inside(workspace, p) for p in spellings):
            continue
        if any(meets_hidden(p) for p in spellings):
            continue
        if _UNSAFE & set(str(cache.path)):
            continue
        if os.path.isdir(cache.path) or any(which(x) for x in _TOOL_EXECUTABLES.get(cache.tool, ())):
            chosen.append(cache)
            seen.add(cache.path)
    return tuple(chosen)
