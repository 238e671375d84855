"""What the sandbox shows of HOME, and what it hides outside it (issue 23; docs/home-allow-list.md).

A list of secret paths always misses the next tool, so it is turned around: inside the sandbox HOME
is an empty read-only tmpfs, and only what the work needs is bound into it, read-only, each entry
with the reason it is there (`gtd sandbox explain` shows them):

- toolchains and their installs (rustup, cargo's `bin` but not `~/.cargo` itself, nvm, pyenv, ...);
- every PATH directory under HOME, with its install prefix when that prefix is a tool's own dir, or
  else the install root of each program linked from it (`~/.local/bin/claude` -> its versions dir);
- gtd's own Python and package when they live under HOME;
- the package caches (read-only here; from readwrite up the session makes them writable layers);
- what the person lists in `sandbox.readPaths`.

The workspace, writable paths, the chosen provider's login and the generated git config are bound
by the policy and the renderer themselves. Nothing is taken from a place the agent can write (the
workspace, a writable path): a PATH entry or a link there could point the list at any secret.
An entry inside a hidden path (denyReadPaths, built-in secrets) is left out: deny wins.

Outside HOME, other users' homes, `/root` (for a person who is not root) and services' state under
`/var` are hidden the same way (an empty read-only tmpfs).

Worked out once per HOME, PATH, workspace, writable and hidden set and kept in gtd's state dir (`persisted`,
keyed also by the identity of the dirs and files it depends on): a hit costs a few dozen stat calls.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from gtd.sandbox.policy.containment import inside, strictly_inside

# (path under HOME, the variable that moves it, why it is visible)
TOOLCHAINS = (
    (".rustup", "RUSTUP_HOME", "rustup's toolchains"),
    (".cargo/bin", None, "cargo's installed programs (not ~/.cargo itself: its config holds registry tokens)"),
    (".nvm", "NVM_DIR", "nvm's Node versions"),
    (".pyenv", "PYENV_ROOT", "pyenv's Python versions"),
    (".sdkman", "SDKMAN_DIR", "SDKMAN!'s JDKs and build tools"),
    ("go", None, "Go's GOPATH (modules and installed programs)"),
    (".volta", "VOLTA_HOME", "Volta's Node versions and tools"),
    (".bun", "BUN_INSTALL", "Bun and its global packages"),
    (".deno", "DENO_INSTALL", "Deno and its installed programs"),
    (".asdf", "ASDF_DATA_DIR", "asdf's tool versions"),
    (".local/share/mise", "MISE_DATA_DIR", "mise's tool installs"),
    (".local/share/fnm", None, "fnm's Node versions"),
    (".local/share/pnpm", "PNPM_HOME", "pnpm and its global packages"),
    (".local/share/uv/python", None, "uv's Python installs"),
    (".local/share/uv/tools", None, "uv's installed tools"),
    (".gradle/wrapper", None, "Gradle wrapper distributions (not ~/.gradle itself: gradle.properties, init.d)"),
    (".local/pipx", "PIPX_HOME", "pipx's program environments"),
    (".rbenv", "RBENV_ROOT", "rbenv's Ruby versions"),
    (".nix-profile", None, "the Nix profile"),
)

# Directories that hold a bit of everything (config, state, credentials): never shown as a whole, even
# when a PATH entry's prefix is one of them; only the install roots of the programs linked from there.
MIXED = ("", ".local", ".local/share", ".local/state", ".local/lib", ".config", ".cache", ".cargo", ".gradle",
         ".m2", "bin", ".bin")

# Services' state under /var (databases, containers, Wi-Fi keys, mail): hidden like HOME, when present.
SERVICE_STATE = (
    "/var/lib/docker", "/var/lib/containerd", "/var/lib/containers", "/var/lib/postgresql", "/var/lib/pgsql",
    "/var/lib/mysql", "/var/lib/mariadb", "/var/lib/redis", "/var/lib/mongodb", "/var/lib/libvirt", "/var/lib/lxd",
    "/var/lib/lxc", "/var/lib/kubelet", "/var/lib/rancher", "/var/lib/etcd", "/var/lib/private", "/var/lib/sss",
    "/var/lib/samba", "/var/lib/jenkins", "/var/lib/gitlab", "/var/lib/grafana", "/var/lib/NetworkManager",
    "/var/lib/iwd", "/var/lib/bluetooth", "/var/lib/tailscale", "/var/lib/zerotier-one", "/var/lib/sudo",
    "/var/lib/systemd/credential", "/var/mail", "/var/spool/mail", "/var/spool/cron", "/var/backups",
)

READ_PATHS_REASON = "sandbox.readPaths"


def home_hidden(home: Path, workspace: Path) -> bool:
    """HOME is hidden unless the workspace is HOME or holds it (then it is the work itself), or HOME is `/`
    (an unset HOME in a service: hiding it would hide the whole system)."""
    return len(Path(os.path.realpath(home)).parts) > 1 and not inside(home, workspace)


def allow_list(home: Path, workspace: Path, *, writable=(), hidden=(), read_paths=(),
               agent_dirs=()) -> tuple[tuple[Path, str], ...]:
    """(path, why) for everything of HOME the sandbox shows read-only (see the module docstring), the
    outermost entries only. `writable`, `hidden`: the policy's writable and denied-read paths;
    `read_paths`: sandbox.readPaths, already expanded; `agent_dirs`: what the agent CLI reads from its
    gtd-managed dir (SandboxNeeds.read_dirs)."""
    from gtd.sandbox.policy.command_env import TLS_TRUST_VARS

    keys = ("PATH", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "PIP_CONFIG_FILE",
            "VIRTUAL_ENV", "GOENV", "CARGO_HOME", "GOPATH", "GRADLE_USER_HOME",
            *(var for _, var, _ in TOOLCHAINS if var), *TLS_TRUST_VARS)
    env = tuple((k, os.environ.get(k, "")) for k in keys)
    home, workspace = Path(home), Path(workspace)
    args = (home, workspace, tuple(writable), tuple(hidden), tuple(read_paths), tuple(agent_dirs), env)
    stamps = _stamped(home, dict(env))
    return persisted("home-allow", [str(a) for a in args], stamps, lambda: _allow_list(*args, stamps),
                     encode=lambda found: [[str(p), why] for p, why in found],
                     decode=lambda value: tuple((Path(p), why) for p, why in value))


def _stamped(home: Path, environ: dict[str, str]) -> tuple[str, ...]:
    """The places whose change can change the list: HOME, the dirs the toolchains and caches live in, each
    PATH dir under HOME and its prefix, the settings files that move caches or name registries. A new
    toolchain, program link, cache or setting changes one of their inodes, sizes or times."""
    from gtd.sandbox.policy import registries as reg

    names = [home, home / ".local", home / ".local/share", home / ".local/lib", home / ".local/bin", home / ".cache",
             home / ".config", home / ".cargo", home / ".gradle", home / ".m2", home / "go", home / "go/pkg",
             home / ".bun/install", home / ".yarn", home / ".nuget", home / ".local/share/uv",
             reg.npmrc_path(home, environ), home / ".m2/settings.xml", home / ".yarnrc", home / ".yarnrc.yml",
             reg._xdg_config(home, environ) / "uv/uv.toml", reg._go_env_path(home, environ),
             reg._xdg_config(home, environ) / "ccache/ccache.conf", *reg.pip_config_files(home, environ)]
    names += [home / rel for rel, _, _ in TOOLCHAINS] + [Path(environ[v]) for _, v, _ in TOOLCHAINS if environ.get(v)]
    for entry in (environ.get("PATH") or "").split(os.pathsep):
        if os.path.isabs(entry) and strictly_inside(Path(entry), home):
            names += [Path(entry), Path(entry).parent]
    return tuple(dict.fromkeys(str(n) for n in names))


# gtd's code that decides the list: a change in it is a new key.
_CODE = ("sandbox/policy/home_allow.py", "sandbox/policy/caches.py", "sandbox/policy/registries.py", "sandbox/policy/gitconfig.py",
         "sandbox/policy/cargo_config.py")


def persisted(kind: str, key, stamps, compute, *, encode=lambda v: v, decode=lambda v: v):
    """compute(), remembered in gtd's state dir (which no sandbox can write) under `key` and the identity
    (inode, size, times) of each of `stamps`: a `gtd sandbox run` is a new process every time, so an
    lru_cache alone would not spare its start the work (issue 23: hiding HOME must not slow the start)."""
    import json

    from gtd import paths
    from gtd.config import cache
    from gtd.digest import sha256

    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    digest = sha256(cache.files_identity([os.path.join(package, c) for c in _CODE]))
    digest.update(cache.files_identity(stamps))
    for name in stamps:  # a directory's entries too: an entry made within the clock tick of the last look
        try:
            digest.update("\0".join(sorted(os.listdir(name))).encode("utf-8", "surrogateescape") + b"\1")
        except OSError:
            digest.update(b"\2")
    digest.update(json.dumps([kind, key], default=str).encode())
    hexdigest = digest.hexdigest()
    if hexdigest in _REMEMBERED:
        return _REMEMBERED[hexdigest]
    directory = paths.user_state_dir() / "cache" / kind
    entry = cache.read(directory, hexdigest)
    if entry is not None and "value" in entry:
        value = decode(entry["value"])
    else:
        value = compute()
        _store(directory, hexdigest, {"value": encode(value)})
    _REMEMBERED[hexdigest] = value
    return value


def _store(directory: Path, key: str, entry: dict) -> None:
    """Atomically store an entry as config.cache does, without `tempfile` (it imports random and shutil: ~3 ms
    of a `gtd sandbox run` start, which issue 13 keeps out). Best effort: a read-only disk only costs speed."""
    import json

    from gtd.config import cache

    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{key}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({**entry, "key": key}, out)
        os.replace(tmp, directory / f"{key}.json")
        cache._prune(directory)
    except OSError:
        pass


_REMEMBERED: dict[str, object] = {}  # this process's answers by key (a workflow builds a policy per phase)


def _allow_list(home: Path, workspace: Path, writable: tuple[Path, ...], hidden: tuple[Path, ...],
                read_paths: tuple[Path, ...], agent_dirs: tuple[Path, ...], env: tuple[tuple[str, str], ...],
                _stamps: tuple[str, ...]) -> tuple[tuple[Path, str], ...]:
    environ = dict(env)
    untrusted = [workspace, *writable]
    untrusted += [Path(os.path.realpath(u)) for u in untrusted]
    hidden_real = [*hidden, *(Path(os.path.realpath(h)) for h in hidden)]
    found: dict[Path, str] = {}

    def mixed(p: Path) -> bool:
        return not strictly_inside(p, home) or os.path.relpath(p, home) in MIXED

    def add(path: Path, why: str, *, allow_mixed: bool = False, later: bool = False) -> None:
        """`later`: gtd creates it before the command runs (an agent's config dir); bound once it exists."""
        path = Path(os.path.normpath(path))
        if not strictly_inside(path, home) or path in found or not (later or os.path.lexists(path)):
            return
        if mixed(path) and not allow_mixed:
            return
        real = Path(os.path.realpath(path))
        for p in (path, real):
            if any(inside(p, u) for u in untrusted):
                return  # the agent writes there: shown as it is, never a source of the list
            if any(inside(p, h) for h in hidden_real):
                return  # a hidden path stays hidden
        if not (later or os.path.exists(real)):
            return
        found[path] = why

    for p in read_paths:
        add(p, READ_PATHS_REASON, allow_mixed=True)
    for p in agent_dirs:
        add(p, "the agent CLI's own config, written by gtd", allow_mixed=True, later=True)
    from gtd.sandbox.policy.command_env import TLS_TRUST_VARS

    for var in TLS_TRUST_VARS:
        value = environ.get(var, "")
        if var != "UV_NATIVE_TLS" and os.path.isabs(value):
            add(Path(value), f"the TLS trust ${var} names (a private CA)", allow_mixed=True)
    for rel, var, why in TOOLCHAINS:
        moved = environ.get(var) if var else None
        add(Path(moved) if moved and os.path.isabs(moved) else home / rel, why)
    cargo_home = environ.get("CARGO_HOME")
    if cargo_home and os.path.isabs(cargo_home):
        add(Path(cargo_home) / "bin", "cargo's installed programs (CARGO_HOME/bin)")
    gradle_home = environ.get("GRADLE_USER_HOME")
    if gradle_home and os.path.isabs(gradle_home):
        add(Path(gradle_home) / "wrapper", "Gradle wrapper distributions (GRADLE_USER_HOME/wrapper)")
    for entry in (environ.get("GOPATH") or "").split(os.pathsep):
        if entry and os.path.isabs(entry):
            add(Path(entry), "Go's GOPATH (modules and installed programs)")
    try:  # ~/.local/lib/python3*: listed by hand (glob's pattern compiles a regular expression: ~10 ms)
        sites = sorted(n for n in os.listdir(home / ".local/lib") if n.startswith("python3"))
    except OSError:
        sites = []
    for site in sites:
        add(home / ".local/lib" / site, "Python packages installed with `pip install --user`")
    for root in gtd_runtime():
        add(root, "gtd's own Python and package")
    for entry in dict.fromkeys((environ.get("PATH") or "").split(os.pathsep)):
        if not entry or not os.path.isabs(entry):
            continue
        _add_path_entry(Path(os.path.normpath(entry)), home, add, mixed)
    _add_registry_settings(home, environ, add)
    from gtd.sandbox.policy.caches import cache_home, known_caches

    for cache in (cache_home(home, environ), *known_caches(home, environ, workspace)):
        add(cache.path, f"{cache.tool} cache (read-only; a writable per-project layer from readwrite up)",
            allow_mixed=cache.tool == "cache-home")
    return _outermost(found)


def _add_path_entry(entry: Path, home: Path, add, mixed) -> None:
    """A PATH directory under HOME, with its prefix (`<prefix>/bin`) when that is a tool's own dir;
    else each program linked from it brings its install root."""
    if not strictly_inside(entry, home):
        return
    add(entry, f"on PATH ({entry})")
    prefix = entry.parent
    if not mixed(prefix):
        add(prefix, f"the install prefix of {entry}, which is on PATH")
        return
    try:
        links = [e.path for e in os.scandir(entry) if e.is_symlink()]
    except OSError:
        return
    for link in links:
        if "/" not in os.readlink(link):
            continue  # a link to a sibling (cargo -> rustup): in the directory already shown
        target = Path(os.path.realpath(link))
        if not strictly_inside(target, home) or not os.path.isfile(target):
            continue
        root = target.parent.parent if target.parent.name == "bin" else target.parent
        if mixed(root):
            root = target.parent if not mixed(target.parent) else target
        add(root, f"the install of {link} (on PATH)", allow_mixed=root == target)


# Anything that could be a credential in a settings file: such a file is never shown as it is.
_CREDENTIAL_LIKE = re.compile(r"token|passw|secret|auth|credential|api[-_]?key|private|://[^/\s@]+@", re.IGNORECASE)


def _add_registry_settings(home: Path, environ: dict[str, str], add) -> None:
    """The person's registry settings files that hold nothing credential-like (pip.conf, uv.toml, yarnrc, the
    go env file): shown as they are. One with credentials is not: the session binds its sanitized copy in
    its place (registries.ToolSettings), or it stays hidden."""
    from gtd.sandbox.policy import registries as reg
    from gtd.workspace_files import read_metadata_text

    candidates = [(p, "pip") for p in reg.pip_config_files(home, environ)]
    candidates += [(reg._xdg_config(home, environ) / "uv" / "uv.toml", "uv"), (home / ".yarnrc", "yarn"),
                   (home / ".yarnrc.yml", "yarn"), (reg._go_env_path(home, environ), "go")]
    for path, tool in candidates:
        if not strictly_inside(path, home) or not os.path.isfile(path):
            continue
        text = read_metadata_text(path)
        if text is not None and not _CREDENTIAL_LIKE.search(text):
            add(path, f"your {tool} registry settings (nothing credential-like in it)", allow_mixed=True)


def _outermost(found: dict[Path, str]) -> tuple[tuple[Path, str], ...]:
    """The entries not inside another one (the outer bind shows the inner), shortest first."""
    kept: list[tuple[Path, str]] = []
    for path in sorted(found, key=lambda p: (len(p.parts), str(p))):
        if not any(inside(path, k) for k, _ in kept):
            kept.append((path, found[path]))
    return tuple(kept)


@functools.lru_cache(maxsize=1)
def gtd_runtime() -> tuple[Path, ...]:
    """gtd's interpreter environment and package (wherever gtd was installed: a pipx venv under HOME)."""
    import sys

    import gtd

    roots = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
             os.path.dirname(os.path.dirname(os.path.realpath(gtd.__file__)))]
    return tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))


def hidden_outside(home: Path, workspace: Path) -> tuple[tuple[Path, str], ...]:
    """(path, why) for what is hidden outside HOME: other users' homes under /home, /root for a person
    who is not root, services' state under /var. Each that exists, is not (around) HOME or the workspace."""
    return _hidden_outside(Path(home), Path(workspace), os.geteuid())


@functools.lru_cache(maxsize=8)
def _hidden_outside(home: Path, workspace: Path, euid: int) -> tuple[tuple[Path, str], ...]:
    keep = {home, workspace, Path(os.path.realpath(home)), Path(os.path.realpath(workspace))}
    found: list[tuple[Path, str]] = []

    def add(path: Path, why: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path) and not any(inside(k, path) or inside(path, k) for k in keep):
            found.append((path, why))

    try:
        homes = sorted(e.path for e in os.scandir("/home") if e.is_dir(follow_symlinks=False))
    except OSError:
        homes = []
    for other in homes:
        add(Path(other), "another user's home")
    if euid != 0:
        add(Path("/root"), "root's home (you are not root)")
    for state in SERVICE_STATE:
        add(Path(state), "a service's state")
    return tuple(found)


# -- for the renderer (bwrap.py) ---------------------------------------------------------------

def hidden_roots(policy) -> list[Path]:
    """What the sandbox covers with an empty read-only tmpfs: /tmp (private, writable), HOME (unless it is
    the work itself) and what home_allow hides outside it (other users' homes, services' state)."""
    hidden = [Path("/tmp")]
    if policy.home_hidden:
        hidden += dict.fromkeys((policy.home, Path(os.path.realpath(policy.home))))
    return hidden + [p for p, _ in policy.hidden_areas]


def under_hidden(path: Path, hidden: list[Path]) -> bool:
    """Whether `path` is covered by one of `hidden` (/tmp itself is private, not covered)."""
    return strictly_inside(path, hidden[0]) or any(inside(path, h) for h in hidden[1:])


def visible_roots(policy) -> list[tuple[Path, Path]]:
    """(source, target): what the command must still see although a hidden root covers it: the workspace,
    gtd's runtime roots (not HOME's own parts: those only through the allow-list) and HOME's allow-list."""
    homes = (policy.home, Path(os.path.realpath(policy.home))) if policy.home_hidden else ()
    found = [(policy.workspace, policy.workspace)]
    found += [(r, r) for r in policy.runtime_roots if not any(inside(r, h) for h in homes)
              and r not in {p for p, _ in policy.hidden_areas}]
    found += [(Path(os.path.realpath(p)), p) for p, _ in policy.home_visible]
    return found
