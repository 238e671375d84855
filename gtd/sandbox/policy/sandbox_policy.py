"""The backend-neutral sandbox policy: built once per phase from config, rendered by each backend.

A level gets the writable paths and allowed domains of every level below it; denied reads and
denied domains from *any* level apply (a deny anywhere wins), and protected paths are always
read-only, even inside writable ones (deny beats allow).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import sys
from pathlib import Path

from gtd import paths
from gtd.config.defaults import DEFAULT_DENY_READ
from gtd.config.levels import Level, Phase
from gtd.record import field, record
from gtd.sandbox.host.gitguard import GitState
from gtd.sandbox.policy.caches import LOCATION_VARS, ToolCache, policy_caches
from gtd.sandbox.policy.containment import inside
from gtd.sandbox.policy.credential_files import CredentialFile, RefusedCredential, resolve_credential_files
from gtd.sandbox.policy.domains import parse_rule
from gtd.sandbox.policy.needs import SandboxNeeds
from gtd.sandbox.policy.protected import home_protected_paths, repo_protected_paths
from gtd.sandbox.policy.registries import Registry, user_registries
from gtd.sandbox.policy.resource_limits import ResourceLimits

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any

    from gtd.config.schema import (
        GtdConfig,  # or a ConfigView over validated values: no pydantic needed
    )

# Always hidden, on top of config's DEFAULT_DENY_READ: more credential stores, shell/REPL histories
# (commands typed with tokens in them) and browser profiles (session cookies). A path that does not
# exist costs one lstat when mounts are rendered.
EXTRA_SECRETS = (
    "~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.histfile", "~/.local/share/fish/fish_history",
    "~/.python_history", "~/.node_repl_history", "~/.psql_history", "~/.mysql_history", "~/.sqlite_history",
    "~/.lesshst", "~/.viminfo", "~/.pgpass", "~/.my.cnf", "~/.s3cfg", "~/.boto", "~/.config/rclone",
    "~/.m2/settings.xml", "~/.m2/settings-security.xml", "~/.gradle/gradle.properties", "~/.gem/credentials",
    "~/.composer/auth.json", "~/.config/composer/auth.json", "~/.config/hub", "~/.config/doctl", "~/.oci",
    "~/.config/op", "~/.config/sops", "~/.config/age", "~/.cache/huggingface/token", "~/.huggingface/token",
    "~/.local/share/keyrings", "~/.pki", "~/.mozilla", "~/.config/google-chrome", "~/.config/chromium",
    "~/.config/BraveSoftware", "~/.config/microsoft-edge", "~/.config/Code/User/globalStorage",
    "~/.fly", "~/.config/heroku", "~/.terraformrc", "~/.config/containers/auth.json",
)

# The file each read-only phase exists to write.
PHASE_FILES = {Phase.PLAN: "TODO.md", Phase.LEARN: "AGENTS.md"}


@record(frozen=True)
class SandboxPolicy:
    level: Level
    workspace: Path
    writable: tuple[Path, ...]
    protected: tuple[Path, ...]
    deny_read: tuple[Path, ...]
    allow_domains: tuple[str, ...]
    deny_domains: tuple[str, ...]
    model_hosts: tuple[str, ...]
    env_passthrough: tuple[str, ...]
    # (rule, origin) for model hosts named by the person's own CLI config (providers/cli_models.py).
    model_host_origins: tuple[tuple[str, str], ...] = ()
    enabled: bool = True
    backend: str = "auto"  # Linux: sandbox.backend (linux/backend_choice.py)
    phase: Phase | None = None
    home: Path = field(default_factory=Path.home)
    # Read-only roots the command needs to run (gtd's Python and package, tool dirs on PATH):
    # visible even where they live under the private /tmp.
    runtime_roots: tuple[Path, ...] = ()
    # Writable directories the sandbox creates when missing: the provider's state dirs and configured
    # paths that do not look like files (`build`, `~/.cache/pip`). A missing `DESIGN.md` stays unwritable
    # until the agent writes it and its approval (or saved rule) creates it as a file, never a directory.
    create_dirs: tuple[Path, ...] = ()
    # The git metadata present at build time: anything new after a run is quarantined (gitguard).
    git_state: GitState | None = field(default=None, compare=False, repr=False)
    # Package caches made writable through a per-project copy-on-write layer (readwrite and above).
    caches: tuple[ToolCache, ...] = ()
    # Processes and memory one sandboxed command may use (sandbox/linux/limits.py); none unless configured.
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    # Registry hosts the person's own settings name (registries.py): reachable at network without a prompt.
    registries: tuple[Registry, ...] = ()
    # Hosts whose registry credentials the person opted in to pass (sandbox.registryCredentials).
    credential_hosts: tuple[str, ...] = ()
    # Network (see docs/network.md): host-loopback ports reachable at 127.0.0.1:PORT
    # inside, and the ports on which direct connections are caught and decided by the proxy's rules.
    host_loopback_ports: tuple[int, ...] = ()
    intercept_ports: tuple[int, ...] = ()
    # A cloud model provider's credentials (credential_files.py): files bound read-only, those refused,
    # and why each passed variable is passed.
    credential_files: tuple[CredentialFile, ...] = ()
    refused_credentials: tuple[RefusedCredential, ...] = ()
    env_origins: tuple[tuple[str, str], ...] = ()
    # HOME is an empty read-only tmpfs inside (home_allow.py), unless the workspace is HOME or holds it;
    # (path, why) for what is bound into it read-only, and for what is hidden outside HOME.
    home_hidden: bool = False
    home_visible: tuple[tuple[Path, str], ...] = ()
    hidden_areas: tuple[tuple[Path, str], ...] = ()
    # Files gtd writes into the hidden HOME, (where, text, why): the person's git and cargo settings without
    # credentials (gitconfig.py, cargo_config.py).
    generated_files: tuple[tuple[Path, str, str], ...] = field(default=(), compare=False, repr=False)
    # The model APIs behind the credential gateway (credential_gateway.GatewayRoute): the CLI holds placeholders.
    model_routes: tuple = field(default=(), compare=False, repr=False)

    @property
    def unrestricted(self) -> bool:
        """True when the command runs without any OS sandbox (level full, or sandbox disabled)."""
        return self.level is Level.FULL or not self.enabled

    @property
    def reachable(self) -> tuple[str, ...]:
        """Every allow rule the proxy applies: the provider's model hosts, then the level's domains."""
        return tuple(dict.fromkeys(self.model_hosts + self.allow_domains + tuple(r.rule for r in self.registries)))

    def to_dict(self) -> dict[str, Any]:
        if self.unrestricted:
            why = "sandbox disabled in config" if not self.enabled else "level full"
            return {
                "level": self.level.value,
                "phase": self.phase.value if self.phase else None,
                "sandboxed": False,
                "reason": why,
                "workspace": str(self.workspace),
                "filesystem": "unrestricted",
                "network": "unrestricted",
            }
        return {
            "level": self.level.value,
            "phase": self.phase.value if self.phase else None,
            "sandboxed": True,
            "workspace": str(self.workspace),
            "readable": ("/ (whole filesystem, read-only) except denyRead and hiddenOutsideHome; HOME is hidden "
                         "except homeAllowList; /tmp is private") if self.home_hidden else
                        "/ (whole filesystem, read-only) except denyRead and hiddenOutsideHome; /tmp is private",
            "homeHidden": self.home_hidden,
            "homeAllowList": [{"path": str(p), "reason": why} for p, why in self.home_visible],
            "hiddenOutsideHome": [{"path": str(p), "reason": why} for p, why in self.hidden_areas],
            "generatedFiles": [{"path": str(p), "reason": why} for p, _, why in self.generated_files],
            "writable": [str(p) for p in self.writable],
            "protected": [str(p) for p in self.protected],
            "denyRead": [str(p) for p in self.deny_read],
            "modelHosts": list(self.model_hosts),
            "modelHostOrigins": dict(self.model_host_origins),
            "allowDomains": list(self.allow_domains),
            "denyDomains": list(self.deny_domains),
            "envPassthrough": list(self.env_passthrough),
            "modelGateway": [r.to_dict() for r in self.model_routes],
            "envOrigins": dict(self.env_origins),
            "credentialFiles": [{"path": str(c.target), "source": str(c.source), "origin": c.origin}
                                for c in self.credential_files],
            "refusedCredentialFiles": [{"path": str(r.path), "origin": r.origin, "reason": r.reason}
                                       for r in self.refused_credentials],
            "registries": [{"host": r.rule, "tool": r.tool, "origin": r.origin} for r in self.registries],
            "registryCredentials": list(self.credential_hosts),
            "packageCaches": [{"tool": c.tool, "path": str(c.path), "origin": c.origin} for c in self.caches],
            "limits": self.limits.to_dict(),
            "hostLoopbackPorts": list(self.host_loopback_ports),
            "interceptPorts": list(self.intercept_ports),
        }


def _resolve(raw: str | Path, *, workspace: Path, home: Path) -> Path:
    """`~/x` under home, a relative path under the workspace, normalised (joined as strings: one Path
    made, not three; a policy resolves ~100 of them on every start)."""
    text = str(raw)
    if text == "~" or text.startswith("~/"):
        joined = os.path.join(home, text[2:])
    else:
        joined = os.path.join(workspace, text)  # an absolute text stands alone
    return Path(os.path.normpath(joined))


def _looks_like_file(path: Path) -> bool:
    """`DESIGN.md`, `out.bin`: a dot past the start of the name. `.cache`, `build`: a directory."""
    return "." in path.name.lstrip(".")


def _unique(items) -> tuple:
    return tuple(dict.fromkeys(items))


def _unique_normalised(paths) -> tuple[Path, ...]:
    """The paths normalised, each once (where it first occurs), compared by their text (a fresh Path's hash
    builds its parts first, and most are normalised already: ~1.5 ms for the ~300 protected paths)."""
    found: dict[str, Path] = {}
    for p in paths:
        text = os.fspath(p)
        norm = os.path.normpath(text)
        if norm not in found:
            found[norm] = p if norm == text and isinstance(p, Path) else Path(norm)
    return tuple(found.values())


def level_for(config: GtdConfig, phase: Phase | None, level: Level | None) -> Level:
    """Explicit level > the phase's configured level > readonly (the tightest)."""
    if level is not None:
        return level
    if phase is not None:
        return Level(config.sandbox.phases.for_phase(phase))  # a GtdConfig or a ConfigView (its string)
    return Level.READONLY


@functools.lru_cache(maxsize=1)
def runtime_roots() -> tuple[Path, ...]:
    """gtd's interpreter and package, and the prefix of every PATH entry (`<prefix>/bin`): the
    scripted agent and the agent CLIs run from there, wherever gtd was installed."""
    import gtd

    roots = [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent,
             Path(gtd.__file__).resolve().parent.parent]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            roots.append(Path(os.path.realpath(entry)).parent)
    return _unique(Path(os.path.realpath(r)) for r in roots if os.path.isdir(r))


def gtd_install_paths() -> list[Path]:
    """gtd's own interpreter environment and package: the host runs them next time, so they are
    protected like git hooks when they happen to live inside a writable root (a project's .venv)."""
    import gtd

    return [Path(os.path.realpath(sys.prefix)), Path(gtd.__file__).resolve().parent]


def tree_may_be_writable(writable: list[Path], workspace: Path) -> bool:
    """Whether a writable path may put a writable directory in or around the work tree: one that is,
    by its spelling or resolved, the workspace, inside it or around it, unless it is an existing regular
    file (a bound file gains no entries). A missing one may be created as a directory. When none can,
    the work tree is not walked for nested repositories (issue 13: the walk is most of the start-up
    cost in a work tree with node_modules or a venv): everything in it is mounted read-only. The
    session refuses to start a command whose mounts turn out otherwise (linux/bwrap_backend.py)."""
    import stat

    for w in writable:
        if not any(inside(p, workspace) or inside(workspace, p) for p in (w, Path(os.path.realpath(w)))):
            continue
        try:
            if stat.S_ISREG(os.lstat(w).st_mode):
                continue
        except OSError:
            pass
        return True
    return False


def build_policy(
    config: GtdConfig,
    *,
    workspace: Path,
    phase: Phase | None = None,
    level: Level | None = None,
    needs: SandboxNeeds | None = None,
    home: Path | None = None,
    extra_writable: tuple[Path, ...] | list[Path] = (),
) -> SandboxPolicy:
    """The policy for `level` (or the phase's). `extra_writable`: paths approved "once" for this phase, as
    they are (already resolved), part of the writable set before the work tree's walk is decided."""
    needs = needs or SandboxNeeds()
    home = Path(home or os.environ.get("HOME") or Path.home())
    workspace = Path(os.path.realpath(workspace))
    level = level_for(config, phase, level)
    levels = config.sandbox.levels
    below = [lv for lv in Level if lv.at_most(level)]
    every = list(Level)

    def res(p):
        return _resolve(p, workspace=workspace, home=home)

    writable: list[Path] = []
    if level.at_most(Level.READONLY):
        if phase in PHASE_FILES:
            writable.append(workspace / PHASE_FILES[phase])
    else:
        writable.append(workspace)
    create_dirs = [res(p) for p in needs.writable_dirs]
    writable += create_dirs
    for lv in below:
        configured = [res(p) for p in levels.for_level(lv).writable_paths]
        writable += configured
        create_dirs += [p for p in configured if not _looks_like_file(p)]

    # The secrets default is always in: a config built without the defaults layer cannot drop it.
    deny_read = [res(p) for p in (*DEFAULT_DENY_READ, *EXTRA_SECRETS)]
    deny_read += [res(p) for lv in every for p in levels.for_level(lv).deny_read_paths]
    allow = [d for lv in below for d in levels.for_level(lv).allow_domains]
    deny = [d for lv in every for d in levels.for_level(lv).deny_domains]
    for rule in (*allow, *deny, *needs.model_hosts):
        parse_rule(rule)  # fail early on a malformed rule, not inside the proxy

    writable += list(extra_writable)
    git_state = GitState()
    nested = tree_may_be_writable(writable, workspace)
    protected = repo_protected_paths(workspace, home, git_state, nested=nested) + home_protected_paths(home, workspace)
    protected += [paths.user_config_dir(), paths.user_state_dir(), workspace / paths.PROJECT_CONFIG_NAME]
    protected += [res(p) for p in needs.protected_paths]
    protected += gtd_install_paths()

    caches: tuple[ToolCache, ...] = ()
    if not level.at_most(Level.READONLY):
        caches = policy_caches(home, workspace, tuple(deny_read) + tuple(protected), writable=writable)

    credential_files, refused_credentials = resolve_credential_files(
        needs.credential_files, workspace=workspace, deny_read=tuple(deny_read), writable=tuple(writable))
    for target, (source, why) in needs.login_files.items():
        # Resolved like a credential file (never from the workspace or a writable path), then bound where
        # the CLI looks: inside its own config dir, which is writable, so it is also protected (read-only).
        found, refused = resolve_credential_files(
            {source: why}, workspace=workspace, deny_read=tuple(deny_read), writable=tuple(writable))
        credential_files += [CredentialFile(target, f.source, f.origin) for f in found]
        refused_credentials += refused
        protected.append(target)
    for route in needs.model_routes:
        if route.login is not None:  # the placeholder login file gtd puts where the CLI looks: read-only
            protected.append(route.login.target)

    from gtd.sandbox.policy.home_allow import allow_list, hidden_outside, home_hidden

    hide_home = home_hidden(home, workspace) and not any(inside(home, w) for w in writable)
    read_paths = tuple(res(p) for p in getattr(config.sandbox, "read_paths", ()) or ())
    home_visible = allow_list(home, workspace, writable=_unique(writable), hidden=_unique(deny_read),
                              read_paths=read_paths, agent_dirs=tuple(needs.read_dirs)) if hide_home else ()
    credential_hosts = _unique(h.lower() for h in config.sandbox.registry_credentials)
    generated_files = _generated_files(home, workspace, credential_hosts) if hide_home else ()

    registries: tuple[Registry, ...] = ()
    if not level.at_most(Level.READWRITE):
        registries = tuple(user_registries(home, workspace=workspace))

    return SandboxPolicy(
        level=level,
        workspace=workspace,
        writable=_unique(writable),
        protected=_unique_normalised(protected),
        deny_read=_unique(deny_read),
        allow_domains=_unique(allow),
        deny_domains=_unique(deny),
        model_hosts=_unique(needs.model_hosts),
        model_host_origins=tuple((rule, origin) for rule, origin in needs.model_host_origins.items()
                                 if rule in needs.model_hosts),
        env_passthrough=_unique([*needs.env_passthrough, *(k for k in LOCATION_VARS if k in os.environ),
                                 *(k for k in config.sandbox.pass_env if k in os.environ)]),
        enabled=config.sandbox.enabled,
        backend=getattr(config.sandbox, "backend", "auto"),
        phase=phase,
        home=home,
        runtime_roots=runtime_roots(),
        create_dirs=_unique(create_dirs),
        git_state=git_state,
        caches=caches,
        limits=ResourceLimits.from_config(config.sandbox.limits),
        registries=registries,
        credential_hosts=credential_hosts,
        host_loopback_ports=tuple(sorted(({p for lv in below for p in levels.for_level(lv).host_loopback_ports}
                                          | set(loopback_ports(needs.model_hosts))
                                          | set(loopback_ports(r.rule for r in registries))) - {RESERVED_PORTS[0]})),
        intercept_ports=tuple(sorted(set(config.sandbox.intercept_ports) - set(RESERVED_PORTS))),
        credential_files=tuple(credential_files),
        refused_credentials=tuple(refused_credentials),
        env_origins=(*needs.env_origins.items(),
                     *((k, "sandbox.passEnv") for k in config.sandbox.pass_env if k in os.environ
                       and k not in needs.env_origins)),
        home_hidden=hide_home,
        home_visible=home_visible,
        hidden_areas=hidden_outside(home, workspace),
        generated_files=generated_files,
        model_routes=tuple(needs.model_routes),
    )


def _generated_files(home: Path, workspace: Path, credential_hosts=()) -> tuple[tuple[Path, str, str], ...]:
    """What gtd writes into the hidden HOME: the git config always, the cargo config and each package
    manager's registry settings when the person has them (registry_files.py)."""
    from gtd.sandbox.policy.cargo_config import cargo_config_file, generated_cargo_config
    from gtd.sandbox.policy.gitconfig import sandbox_git_config

    found = [(home / ".gitconfig", sandbox_git_config(home), "generated by gtd from your global git config "
              "(credential helpers, http settings, includes and URLs with credentials left out)")]
    cargo = cargo_config_file(home)
    text = generated_cargo_config(cargo) if cargo is not None else None
    if text is not None:
        found.append((cargo, text, "generated by gtd from your cargo config (registry tokens, credential "
                      "providers and [env] left out)"))
    from gtd.sandbox.policy.registry_files import registry_files

    found += registry_files(home, workspace, credential_hosts)
    return tuple(found)


# Inside the namespace: gtd's proxy port and DNS.
RESERVED_PORTS = (3128, 53, 3129)  # 3129: the model credential gateway (network/credential_gateway.py)


def loopback_ports(hosts) -> list[int]:
    """Ports of `host:port` rules that name the host's loopback (a model API or a registry your own settings
    name, served on this machine: verdaccio, devpi): those are forwarded from the sandbox's own 127.0.0.1, where clients that bypass the proxy for
    loopback connect."""
    ports = []
    for text in hosts:
        rule = parse_rule(text)
        if rule.port is not None and (rule.host == "localhost" or (rule.is_ip_literal and ipaddress.ip_address(rule.host).is_loopback)):
            ports.append(rule.port)
    return ports
