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
import subprocess
import sys
from pathlib import Path
from gtd.record import record
from gtd.sandbox.policy.containment import inside, strictly_inside
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


def layer_dir(workspace: Path) -> Path:
    """The project's upper layers (under gtd's state dir: the agent can read, never write it)."""
    from gtd import paths

    return paths.project_state_dir(workspace) / "caches"


def fallback_dir(workspace: Path) -> Path:
    """The project's own caches when overlays are impossible (outside gtd's protected state)."""
    from gtd import paths

    return paths.user_dir("cache") / "projects" / paths.project_key(workspace)


class CacheLayer:
    """One session's package caches: the overlay holder (or the fallback dirs) and how bwrap uses them."""

    def __init__(self, caches: tuple[ToolCache, ...], workspace: Path, *, layers: Path | None = None,
                 untrusted: tuple[Path, ...] = ()):
        self.caches = caches
        self.workspace = workspace
        self.untrusted = (workspace, *untrusted)  # PATH there is never searched for unshare/nsenter/mount
        self.layers = layers or layer_dir(workspace)
        self._mounted: list[ToolCache] = []
        self.mode: str = "none"  # "overlay" | "per-project" | "none"
        self.detail = ""
        self._holder: subprocess.Popen | None = None  # the holder, once its overlays are mounted
        self._nsenter: str | None = None  # found with unshare when the holder starts; each command enters by it
        self._starting: subprocess.Popen | None = None  # the holder, still mounting
        self._fstab: str | None = None
        self._lock_fd: int | None = None  # flock on the project's layers while this session uses them
        self._throwaway: Path | None = None  # this session's own layers when another session holds the project's
        self._writable: list[Path] = []
        self._env: dict[str, str] = {}

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> "CacheLayer":
        """Start the holder; its mounts finish while the session sets up the rest (see _ready)."""
        if not self.caches:
            return self
        try:
            self._start_overlay()
        except OSError as exc:
            self.detail = str(exc)
            self._start_fallback()
        return self

    def _ready(self) -> None:
        """Wait for the holder's mounts (once): overlay mode, or the fallback if they failed."""
        holder, self._starting = self._starting, None
        if holder is None:
            return
        fstab, self._fstab = self._fstab, None
        try:
            ready = holder.stdout.readline()
        finally:
            if fstab:
                os.unlink(fstab)
        if ready.strip() == b"ready":
            self._holder = holder
            self.mode = "overlay"
            self._writable = [c.path for c in self._mounted]
            return
        holder.kill()
        err = holder.stderr.read().decode(errors="replace").strip()
        _reap(holder)
        self.detail = f"overlay mount failed: {err or 'no reply'}"
        self._start_fallback()

    def close(self) -> None:
        """The holder is only a namespace anchor: killing it unmounts the overlays once no sandbox is left."""
        self._ready()
        holder, self._holder = self._holder, None
        if holder is not None:
            holder.kill()
            _reap(holder)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._throwaway is not None:
            _remove_tree(self._throwaway)
            self._throwaway = None

    # -- what the session uses --------------------------------------------------------------
    def writable(self) -> list[Path]:
        """Extra writable binds: the overlaid caches (or the per-project fallback dirs)."""
        self._ready()
        return list(self._writable)

    def environment(self) -> dict[str, str]:
        """Variables that point tools at the fallback dirs (empty in overlay mode)."""
        self._ready()
        return dict(self._env)

    def wrap(self, argv: list[str]) -> list[str]:
        """bwrap's argv, started inside the holder's mount namespace (as the same user) in overlay mode."""
        self._ready()
        if self._holder is None or not argv or os.path.basename(argv[0]) != "bwrap":
            return argv
        prefix = [self._nsenter, "-t", str(self._holder.pid), "--mount"]
        if os.geteuid() != 0:
            # The holder's user namespace maps only our uid (as 0); bwrap maps it back to who we are.
            prefix += ["--user", "--preserve-credentials"]
            return [*prefix, "--", argv[0], "--uid", str(os.getuid()), "--gid", str(os.getgid()), *argv[1:]]
        return [*prefix, "--", *argv]

    # -- overlay ------------------------------------------------------------------------------
    def _layer_base(self) -> Path:
        """The project's persistent layers, held under an exclusive lock for this session. If another gtd
        session of the project holds them (two overlays sharing an upper dir is undefined behaviour), this
        session gets a throwaway layer instead, removed when it closes."""
        import fcntl

        self.layers.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.layers / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            import tempfile  # here, as below: a readonly session (no package caches) never needs it

            self._throwaway = Path(tempfile.mkdtemp(prefix="session-", dir=self.layers))
            return self._throwaway
        self._lock_fd = fd
        return self.layers

    def _start_overlay(self) -> None:
        from gtd.host_programs import host_environment, host_program

        unshare, self._nsenter = host_program("unshare", self.untrusted), host_program("nsenter", self.untrusted)
        if unshare is None or self._nsenter is None:
            raise OSError("util-linux unshare/nsenter not found")
        base = self._layer_base()
        lines, mounted = [], []
        root = os.geteuid() == 0
        folded_into: Path | None = None  # the cache home's overlay, once mounted: caches inside it are in it
        for cache in self.caches:
            if folded_into is not None and strictly_inside(os.path.realpath(cache.path), folded_into):
                continue
            if not self._ensure_lower(cache):
                continue
            upper, work = base / cache.key / "upper", base / cache.key / "work"
            upper.mkdir(parents=True, exist_ok=True, mode=0o700)
            work.mkdir(parents=True, exist_ok=True, mode=0o700)
            lower = Path(os.path.realpath(cache.path))
            if _UNSAFE & set(str(lower) + str(base)):
                continue
            if cache.tool == CACHE_HOME:
                folded_into = lower  # first in self.caches (policy_caches puts it there)
            options = f"lowerdir={lower},upperdir={upper},workdir={work}" + ("" if root else ",userxattr")
            lines.append(f"overlay {lower} overlay {options} 0 0\n")
            mounted.append(cache)
        if not mounted:
            raise OSError("no cache could be prepared")
        import tempfile

        fd, fstab = tempfile.mkstemp(prefix="gtd-caches-", suffix=".fstab")
        try:
            with os.fdopen(fd, "w") as f:
                f.writelines(lines)
            argv = [unshare, "--mount", "--propagation", "private"]
            if not root:
                argv[1:1] = ["--user", "--map-root-user"]
            script = 'mount -a -T "$1" || exit 1; echo ready; read _ignored'
            self._starting = subprocess.Popen([*argv, "/bin/sh", "-c", script, "holder", fstab], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                              env=host_environment(self.untrusted))
        except OSError:
            os.unlink(fstab)
            raise
        self._fstab = fstab
        self._mounted = mounted

    @staticmethod
    def _ensure_lower(cache: ToolCache) -> bool:
        """The user's cache dir must exist to be a layer: created empty when its tool is installed (the
        tool would create it on its first run anyway), the cache home always. Never through a symlinked
        or non-directory path."""
        if os.path.isdir(cache.path):
            return True
        if os.path.lexists(cache.path):
            return False
        try:
            cache.path.mkdir(parents=True, mode=0o755)
            return True
        except OSError:
            return False

    # -- fallback -------------------------------------------------------------------------------
    def _start_fallback(self) -> None:
        base = fallback_dir(self.workspace)
        for cache in self.caches:
            if cache.env is None:
                continue  # no variable moves only the cache (cargo, gradle, maven): it stays read-only
            target = base / cache.key
            try:
                target.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError:
                continue
            self._env[cache.env] = str(target)
            self._writable.append(target)
        self.mode = "per-project" if self._writable else "none"


def _reap(holder: subprocess.Popen) -> None:
    holder.wait()
    for stream in (holder.stdin, holder.stdout, holder.stderr):
        if stream is not None:
            stream.close()


def _remove_tree(path: Path) -> None:
    """Remove a throwaway layer, overlayfs's mode-000 work dirs included (owned by us, but unreadable). The
    layer holds what the agent wrote: no symlink in it is followed (locked_tree). Best effort."""
    from gtd.sandbox.host.locked_tree import remove_tree

    try:
        remove_tree(path)
    except OSError:
        pass


def overlay_check() -> tuple[bool, str]:
    """For `gtd doctor`: mount one overlay the way sessions do, in a temp dir."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gtd-overlay-") as tmp:
        lower = Path(tmp) / "lower"
        lower.mkdir()
        layer = CacheLayer((ToolCache("probe", lower),), Path(tmp) / "ws", layers=Path(tmp) / "layers")
        try:
            layer._start_overlay()
            layer._ready()
            if layer.mode != "overlay":
                return False, layer.detail
        except OSError as exc:
            return False, str(exc)
        finally:
            layer.close()
    return True, "copy-on-write overlay per project (reads hit your caches, writes stay in gtd's state dir)"
