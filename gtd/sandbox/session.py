"""One sandbox session per agent run: the proxy and the seccomp program are set up once here,
then every command (the agent, the build phase's test command) runs through `popen`/`run`.

Fails closed: if the sandbox is enabled and cannot start, `SandboxUnavailable` is raised with
what to do about it. Level `full` and a disabled sandbox run commands directly, only because
config or an approval asked for it; `unsandboxed` tells the caller to log that.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from gtd.errors import SandboxUnavailable  # noqa: F401 - callers catch it from here
from gtd.sandbox.backend import DOCTOR_HINT  # noqa: F401 - re-exported
from gtd.sandbox.command_signals import CtrlCPassedOn, kill_group
from gtd.sandbox.events import NetworkRequest, Violation
from gtd.sandbox.policy.command_env import BASE_ENV_KEYS, NO_PROXY, PROXY_VARS, tls_trust
from gtd.sandbox.policy.containment import inside, strictly_inside
from gtd.sandbox.policy.sandbox_policy import PHASE_FILES, SandboxPolicy

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable, Sequence

PROXY_PORT = 3128  # inside the sandbox's own network namespace, so it never clashes


class SandboxSession:
    def __init__(
        self,
        policy: SandboxPolicy,
        *,
        network_decider: Callable[[NetworkRequest], bool] | None = None,
        on_violation: Callable[[Violation], None] | None = None,
        resolver: Callable[[str, int], list[str]] | None = None,
        in_step: bool = True,
    ):
        self.policy = policy
        self._in_step = in_step  # commands of a workflow step (gtd commits after) or the person's own
        self.violations: list[Violation] = []
        self._decider = network_decider
        self._on_violation = on_violation
        self._resolver = resolver  # tests map names to local servers; production uses DNS
        self._lock = threading.Lock()
        self._started = False
        self._proxy = None
        self._names = None  # DNS stand-in addresses, shared by every command of the session
        self._registry = None
        self._children: list[tuple[subprocess.Popen, object]] = []
        self._created_files: list[Path] = []  # the phase file, created empty so it can be bound
        self._relays: list = []  # stdio pumps (sandbox/stdio.py), drained before close() returns
        self.backend = None  # the OS mechanism (gtd.sandbox.backend), chosen by start()
        self._tools = None  # the person's registry settings, secrets left out (registries.py)
        # Whether some command could write into the work tree (a writable directory bound in or around
        # it): only then is the whole tree walked for planted `.git` entries at close (gitguard.planted).
        self._tree_writable = False
        self._journal = None  # this session's baseline on disk, locked (gitguard.remember) until it closes
        self._credentials = None  # the model credential gateway (network/credential_gateway.py), where served
        self.token = _token()
        self.proxy_port = PROXY_PORT

    @property
    def unsandboxed(self) -> bool:
        return self.policy.unrestricted

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "SandboxSession":
        if self._started:
            return self
        if not self.unsandboxed:
            self.backend = _backend_for(self)
            signed = [r.name for r in self.policy.model_routes if r.signer is not None]
            if signed and not self.backend.serves_model_gateway:  # no credentials for it inside either: stop
                raise SandboxUnavailable(f"the {', '.join(signed)} route needs gtd's model gateway, which this "
                                         "sandbox backend does not serve; see docs/credential-gateway.md")
            if self.policy.model_routes and self.backend.serves_model_gateway:
                from gtd.sandbox.network.credential_gateway import CredentialGateway

                self._credentials = CredentialGateway(self.policy.model_routes, on_misuse=self._gateway_misuse)
            self.backend.start()
            from gtd.sandbox.policy.registries import ToolSettings

            self._tools = ToolSettings(self.policy.home, self.policy.credential_hosts).start(bind=self.backend.binds_files)
            self._prepare_paths()
            from gtd.sandbox.host.placeholders import PlaceholderRegistry

            self._registry = PlaceholderRegistry(self.policy.workspace)
            self._record_settled(self._registry.enter())  # what a killed session left behind
            self._settle_killed_sessions()
            self.backend.prepare_host(self._registry)
        from gtd.sandbox.host import special_files

        special_files.session_opened()  # host git sweeps the work tree before every run until it closes
        self._started = True
        return self

    def close(self) -> None:
        if not self._started:
            return
        self._started = False
        from gtd.sandbox.host import special_files

        special_files.forget()  # what the agent made meanwhile is swept before the next host git run
        with self._lock:
            children, self._children = self._children, []
        for proc, listener in children:
            if proc.poll() is None:
                kill_group(proc)
            self._stop_listener(listener)
        if self.backend is not None:
            self.backend.close()  # everything inside is gone once it returns
        for relay in self._relays:
            relay.join()
        self._relays.clear()
        if self._tools is not None:
            self._tools.close()
        if self._proxy is not None:
            self._proxy.close()
        if self._registry is not None:
            self._record_settled(self._registry.exit())
        self._quarantine_planted_git()

    def _record_settled(self, settled: list[tuple[Path, str]]) -> None:
        """Protected paths the agent created (quarantined by the registry) are write violations."""
        for path, what in settled:
            if "quarantine" in what or "COULD NOT" in what:
                self.record_violation(Violation.now("write", str(path), self.policy.level, what))

    def _settle_killed_sessions(self) -> None:
        """Quarantine what a session of this project that never closed left (gitguard.settle), then write
        this session's baseline for the next one should gtd be killed too."""
        state = self.policy.git_state
        if state is None or not state.walked:
            return  # nothing in the work tree was writable: nothing could be planted there
        from gtd import paths
        from gtd.sandbox.host.gitguard import remember, settle

        into = paths.project_state_dir(self.policy.workspace) / "quarantine"
        self._record_settled(settle(state, self.policy.workspace, into))
        self._journal = remember(state, self.policy.workspace)

    def _quarantine_planted_git(self) -> None:
        state = self.policy.git_state
        if self.unsandboxed or state is None:
            return
        from gtd import paths
        from gtd.sandbox.host.gitguard import planted, quarantine

        found = planted(state, self.policy.workspace, walk_tree=self._tree_writable,
                        outside_writable=self._writable_outside() if self._tree_writable else ())
        into = paths.project_state_dir(self.policy.workspace) / "quarantine"
        for path, what in quarantine(list(found), self.policy.workspace, into, what=found):
            self.record_violation(Violation.now("write", str(path), self.policy.level, what))
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def _writable_outside(self) -> tuple[str, ...]:
        """Resolved places outside the workspace the agent can write and the host keeps: the policy's
        writable paths there, gtd's state dir (the package caches' layers) and the agent CLIs' dirs (also
        when this session's provider does not write them: a link made now may be filled by a later run)."""
        from gtd import paths
        workspace = os.path.realpath(self.policy.workspace)
        roots = [*self.policy.writable, paths.user_state_dir(), paths.agents_dir()]
        resolved = (os.path.realpath(r) for r in roots)
        return tuple(r for r in dict.fromkeys(resolved) if not inside(workspace, r) and not inside(r, workspace))

    def __enter__(self) -> "SandboxSession":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def limit_hit(self, setting: str, what: str) -> None:
        """A resource limit a command hit (reported by the backend's cgroups), with the setting to raise."""
        self.record_violation(Violation.now("limit", setting, self.policy.level, f"{what}; raise {setting} in config"))

    def record_violation(self, v: Violation) -> None:
        with self._lock:
            self.violations.append(v)
        if self._on_violation is not None:
            self._on_violation(v)

    # -- running -----------------------------------------------------------------------------
    def popen(self, argv: Sequence[str], *, cwd, env: dict | None = None, stdin=None, stdout=None, stderr=None) -> subprocess.Popen:
        self.start()
        argv = [str(a) for a in argv]
        if self.unsandboxed:
            return subprocess.Popen(
                argv, cwd=cwd, env={**os.environ, **(env or {})}, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True
            )
        self._reap()
        return self.backend.popen(argv, cwd, env, stdin, stdout, stderr)

    def passing_ctrl_c(self) -> CtrlCPassedOn:
        """For a command the person runs (`gtd sandbox run -- npm run dev`): while the block runs, each
        Ctrl-C goes on to the command (`.to(proc)`) as SIGINT; see CtrlCPassedOn."""
        return CtrlCPassedOn(self)

    def signal_command(self, proc: subprocess.Popen, signum: int) -> None:
        if self.backend is None:  # unsandboxed: the command leads its own session
            try:
                os.killpg(proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass
            return
        self.backend.signal_command(proc, signum)

    def run(self, argv: Sequence[str], *, cwd, env: dict | None = None, timeout: float | None = None, input: bytes | None = None) -> subprocess.CompletedProcess:
        proc = self.popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, timeout, out, err) from None
        except BaseException:
            kill_group(proc)
            proc.wait()
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def environment(self, extra: dict | None = None) -> dict[str, str]:
        """The sandbox's minimal environment: no host secrets except the provider's own credential, and that
        only as a placeholder where the credential gateway serves it (network/credential_gateway.py)."""
        env = {k: os.environ[k] for k in BASE_ENV_KEYS if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.setdefault("LANG", "C.UTF-8")
        env["HOME"] = str(self.policy.home)
        env["TMPDIR"] = "/tmp"
        env["GTD_SANDBOX"] = self.policy.level.value
        host = "127.0.0.1"
        for key in PROXY_VARS:
            env[key] = f"http://gtd:{self.token}@{host}:{self.proxy_port}"
        env["NO_PROXY"] = env["no_proxy"] = NO_PROXY
        env.update(tls_trust(os.environ, self.policy.deny_read))
        for key in self.policy.env_passthrough:
            if key in os.environ:
                env.setdefault(key, os.environ[key])  # never over gtd's own (HOME, TMPDIR, the proxy)
        if self._tools is not None:
            env.update(self._tools.environment())
        if self.backend is not None:
            env.update(self.backend.environment())
        env.update({k: str(v) for k, v in (extra or {}).items()})
        if self._credentials is not None:  # last: no key reaches the sandbox, whoever named it
            from gtd.sandbox.network.credential_gateway import BASE_URL_VARS

            for key, placeholder in self._credentials.env_placeholders.items():
                env[key] = placeholder
            urls = self.gateway_urls()
            for key, route in BASE_URL_VARS.items():
                if route in urls:
                    env[key] = urls[route]
            env.update(self._credentials.route_env(urls))
        return env

    @property
    def credentials(self):
        """The session's model credential gateway (network/credential_gateway.py), or None."""
        return self._credentials

    def gateway_urls(self) -> dict[str, str]:
        """{route: the base URL inside the sandbox} for the model APIs behind the credential gateway; empty
        when there is none (unsandboxed): the CLI then talks to its API as configured. Without a network
        namespace (Landlock, seatbelt) the port is the backend's own on the host's loopback."""
        if self._credentials is None:
            return {}
        from gtd.sandbox.network.credential_gateway import gateway_url

        port = self.backend.gateway_port if self.backend is not None and self.backend.gateway_port else None
        return {name: gateway_url(name, *([port] if port else [])) for name in self._credentials.routes}

    def _gateway_misuse(self, route: str, reason: str) -> None:
        self.record_violation(Violation.now("network", f"model gateway route {route}", self.policy.level,
                                            f"exfiltration attempt: {reason}"))

    def _find_placeholder(self, data: bytes) -> str | None:
        """What a model-credential placeholder in `data` stands for (the proxy refuses to carry it)."""
        return self._credentials.find_placeholder(data) if self._credentials is not None else None

    def untrusted_dirs(self) -> tuple[Path, ...]:
        """Where the agent writes: PATH directories there are never searched for a program gtd runs on
        the host (gtd.host_programs)."""
        return (self.policy.workspace, *self.policy.writable)

    def make_proxy(self) -> None:
        """The filtering proxy every command of the session connects through (the backend serves it)."""
        from gtd.sandbox.network.dns import StandInNames
        from gtd.sandbox.network.proxy import FilteringProxy
        from gtd.sandbox.policy.domains import DomainRules

        self._names = StandInNames()
        rules = DomainRules.parse(self.policy.reachable, self.policy.deny_domains)
        self._proxy = FilteringProxy(rules, self.token, ask=self._ask if self._decider else None, on_denied=self._denied,
                                     resolver=self._resolver, find_secret=self._find_placeholder)

    def _ask(self, host: str, port: int) -> bool:
        return bool(self._decider(NetworkRequest(host, port, self.policy.level)))

    def _denied(self, host: str, port: int, reason: str) -> None:
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.record_violation(Violation.now("network", target, self.policy.level, reason))

    def _prepare_paths(self) -> None:
        """Create the policy's missing `create_dirs`, and the phase's own file at readonly (a bind needs
        something to bind), never through a symlink (hostcreate). Any other missing writable path is
        left alone: what it should be (file or directory) is only known once the agent tries to write
        it, and its approval creates it."""
        from gtd.sandbox.host.hostcreate import create_empty_file, existing_prefix, make_dirs

        policy = self.policy
        phase_file = policy.workspace / PHASE_FILES[policy.phase] if policy.phase in PHASE_FILES else None
        for w in policy.writable:
            if os.path.lexists(w) or any(inside(w, p) for p in policy.protected):
                continue
            if any(inside(w, d) and not strictly_inside(w, d) for d in policy.deny_read):
                continue
            if inside(w, policy.workspace):
                base = policy.workspace
                target = w
            else:  # the user's own symlinks outside the workspace are honoured, then checked again
                prefix, rest = existing_prefix(w)
                base = Path(os.path.realpath(prefix))
                target = base.joinpath(*rest)
                if any(inside(target, p) for p in policy.protected):
                    continue
            try:
                if w == phase_file:
                    create_empty_file(target, base)
                    self._created_files.append(w)
                elif w in policy.create_dirs:
                    make_dirs(target, base)
            except OSError:
                pass  # left out of the sandbox's writable set; the command sees a read-only path

    def _reap(self) -> None:
        """Stop the listeners of commands that ended. Commands may start from several threads at once: each
        ended child is taken out under the lock, so its listener is stopped once (stopped twice, a gateway
        closed its pidfd twice, and the second close could hit a descriptor another thread had just opened)."""
        ended, running = [], []
        with self._lock:
            for child in self._children:
                (running if child[0].poll() is None else ended).append(child)
            self._children = running
        for _proc, listener in ended:
            self._stop_listener(listener)

    def _stop_listener(self, listener) -> None:
        if listener is None:
            return
        if hasattr(listener, "close") and not hasattr(listener, "accept"):
            listener.close()  # a NamespaceGateway
        elif self._proxy is not None:
            self._proxy.stop_serving(listener)



def _backend_for(session: SandboxSession):
    """The backend for this machine: seatbelt on macOS; on Linux bubblewrap, or Landlock + seccomp where
    bubblewrap cannot create its namespaces or `sandbox.backend` says so (linux/backend_choice.py). Each
    refuses to start, naming why, where it cannot run."""
    if sys.platform == "darwin":
        from gtd.sandbox.macos.seatbelt_backend import SeatbeltBackend

        return SeatbeltBackend(session)
    if sys.platform.startswith("linux"):
        from gtd.host_programs import host_program
        from gtd.sandbox.linux.backend_choice import choose

        choice = choose(session.policy.backend, host_program("bwrap", session.untrusted_dirs()))
        if choice.name == "landlock":
            from gtd.sandbox.linux.landlock_backend import LandlockBackend

            return LandlockBackend(session, choice.reason)
    from gtd.sandbox.linux.bwrap_backend import BwrapBackend

    return BwrapBackend(session)


def _token() -> str:
    """The proxy's password: 24 bytes of os.urandom (as secrets.token_urlsafe(24) takes), spelled in hex,
    without importing `secrets` (hmac, hashlib and random: ~5 ms of every `gtd sandbox run`) or base64's
    encoder (binascii, a shared library: ~0.3 ms)."""
    return os.urandom(24).hex()


def open_sandbox(policy: SandboxPolicy, **kw) -> SandboxSession:
    """A started session (use it as a context manager or call close()). Raises SandboxUnavailable."""
    return SandboxSession(policy, **kw).start()
