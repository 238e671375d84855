"""One sandbox session per agent run: the proxy and the seccomp program are set up once here,
then every command (the agent, the build phase's test command) runs through `popen`/`run`.

Fails closed: if the sandbox is enabled and cannot start, `SandboxUnavailable` is raised with
what to do about it. Level `full` and a disabled sandbox run commands directly, only because
config or an approval asked for it; `unsandboxed` tells the caller to log that.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from gtd.background import Background
from gtd.config.levels import Level
from gtd.errors import SandboxUnavailable
from gtd.record import record
from gtd.sandbox.policy.containment import inside, strictly_inside
from gtd.sandbox.policy.sandbox_policy import PHASE_FILES, SandboxPolicy
from gtd.which import which

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable, Literal, Sequence

PROXY_PORT = 3128  # inside the sandbox's own network namespace, so it never clashes
BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "TZ")
# Where the person's TLS clients find their trusted CAs. On machines behind a TLS-inspecting
# gateway (most corporate networks) every HTTPS client fails without these, so dropping them would
# be a false denial. They name certificate bundles, never secrets, and pass only when they name a
# path the sandbox can read (see `_tls_trust`).
TLS_TRUST_VARS = (
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "PIP_CERT", "UV_NATIVE_TLS", "NIX_SSL_CERT_FILE", "CARGO_HTTP_CAINFO",
    "NPM_CONFIG_CAFILE", "npm_config_cafile", "HTTPLIB2_CA_CERTS", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "AWS_CA_BUNDLE", "DENO_CERT",
)
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
# No ALL_PROXY: clients read it as "SOCKS for everything" and some then fail outright (httpx, and so
# the Python SDKs built on it, without the optional socksio). The SOCKS5 endpoint stays on the proxy
# port for clients configured to use it; other protocols are caught on the intercepted ports.
# Loopback inside the sandbox is the sandbox's own: every client connects there directly. Spelled
# for each client's matcher: exact names (Python, wget), suffixes (`.localhost`), CIDR (curl, Go).
NO_PROXY = "localhost,.localhost,127.0.0.1,127.0.0.0/8,::1"  # no "[::1]": httpx rejects it
KILL_PRESSES_SECONDS = 2.0  # three Ctrl-C this close together kill a command (`gtd sandbox run`)
START_ATTEMPTS = 3  # a sandbox whose network could not be set up is started again (it has not run anything)
DOCTOR_HINT = "Run `gtd doctor` for details."


@record
class NetworkRequest:
    host: str
    port: int
    level: Level


@record
class Violation:
    kind: Literal["network", "write", "read", "limit"]
    target: str
    level: Level
    time: str
    detail: str = ""

    @classmethod
    def now(cls, kind, target: str, level: Level, detail: str = "") -> "Violation":
        from datetime import datetime, timezone  # here: most commands are never refused anything

        return cls(kind, target, level, datetime.now(timezone.utc).isoformat(timespec="seconds"), detail)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "target": self.target, "level": self.level.value, "time": self.time, "detail": self.detail}


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
        self._program: bytes | None = None
        self._registry = None
        self._children: list[tuple[subprocess.Popen, object]] = []
        self._inits: list[int] = []  # pidfds of each sandbox's pid-namespace init (bwrap's child)
        self._init_pids: dict[int, int] = {}  # bwrap's pid -> its namespace init's pid (as the host sees it)
        self._created_files: list[Path] = []  # the phase file, created empty so it can be bound
        self._relays: list = []  # stdio pumps (sandbox/stdio.py), drained before close() returns
        self._caches = None  # the package-cache layer (caches.py), Linux only
        self._layers = None  # Landlock and resource limits under bwrap (sandbox/linux/kernel.py)
        self._cgroups: list = []  # one per sandboxed command, removed once everything inside is gone
        self._spare_cgroup = None  # made by start() for the first command (in self._cgroups already)
        self._bwrap: str | None = None  # bubblewrap's path, found by start() outside the workspace (host_programs)
        self._tools = None  # the person's registry settings, secrets left out (registries.py)
        # Whether some command could write into the work tree (a writable directory bound in or around
        # it): only then is the whole tree walked for planted `.git` entries at close (gitguard.planted).
        self._tree_writable = False
        self._journal = None  # this session's baseline on disk, locked (gitguard.remember) until it closes
        self._backend = None  # the Landlock backend when backend_choice picked it (linux/landlock_backend.py)
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
            if sys.platform == "darwin":
                self._start_proxy_on_host()
            else:
                self._check_linux()
                from gtd.sandbox.linux.kernel import KernelLayers

                # First, so the priming cgroup move's grace period (~10-15 ms) runs while the rest is set up.
                self._layers = KernelLayers.for_policy(self.policy)
                if self._layers.cgroups:  # the first command's cgroup move then waits for nothing
                    from gtd.sandbox.linux.limits import prime_moves, take_ready

                    # The first command's cgroup is made before the priming move starts: a mkdir in a cgroup
                    # hierarchy waits for a move in flight and would stall the first command's start here.
                    # `gtd sandbox run` made both before building the policy (limits.make_ready).
                    ready = take_ready(self._layers.limits, self._layers.cgroups)
                    self._spare_cgroup = ready or self._layers.cgroup()
                    if self._spare_cgroup is not None:
                        self._cgroups.append(self._spare_cgroup)
                    if ready is None:
                        Background(prime_moves)
                if self._backend is not None:
                    self._backend.start()  # its own seccomp filter and proxy listener; no package-cache layer
                else:
                    from gtd.sandbox.linux.seccomp import cached_filter

                    try:
                        self._program = cached_filter()
                    except (OSError, ImportError, AttributeError) as exc:
                        raise SandboxUnavailable(f"cannot build the seccomp filter (libseccomp): {exc}. {DOCTOR_HINT}") from exc
                    self._proxy = self._make_proxy()
                    from gtd.sandbox.policy.caches import CacheLayer

                    self._caches = CacheLayer(self.policy.caches, self.policy.workspace, untrusted=self.untrusted_dirs()).start()
            from gtd.sandbox.policy.registries import ToolSettings

            self._tools = ToolSettings(self.policy.home, self.policy.credential_hosts).start(
                bind=sys.platform != "darwin" and self._backend is None)
            self._prepare_paths()
            from gtd.sandbox.host.placeholders import PlaceholderRegistry

            self._registry = PlaceholderRegistry(self.policy.workspace)
            self._record_settled(self._registry.enter())  # what a killed session left behind
            self._settle_killed_sessions()
            if sys.platform != "darwin" and self._backend is None:  # bwrap's mount points
                from gtd.sandbox.host.hostcreate import make_placeholder_parents

                make_placeholder_parents(self.policy, self._registry)
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
                _kill_group(proc)
            self._stop_listener(listener)
        if self._backend is not None:
            self._backend.close()  # what left its process group dies with the cgroup
        self._wait_for_inits()
        for relay in self._relays:
            relay.join()
        self._relays.clear()
        if self._caches is not None:
            self._caches.close()
        for cgroup in self._cgroups:
            for setting, what in cgroup.hits():
                self.record_violation(Violation.now("limit", setting, self.policy.level, f"{what}; raise {setting} in config"))
            cgroup.remove()
        self._cgroups.clear()
        self._spare_cgroup = None
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

    def _wait_for_inits(self, timeout: float = 10.0) -> None:
        """Block until every sandboxed process is gone (the namespace's init exits only after all of
        them), so nothing inside can still write while the work tree is checked."""
        import select

        deadline = time.monotonic() + timeout
        for fd in self._inits:
            try:
                select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            finally:
                os.close(fd)
        self._inits.clear()

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
        from gtd.providers.agent_dirs import agent_dir

        workspace = os.path.realpath(self.policy.workspace)
        roots = [*self.policy.writable, paths.user_state_dir(), agent_dir("any").parent]
        resolved = (os.path.realpath(r) for r in roots)
        return tuple(r for r in dict.fromkeys(resolved) if not inside(workspace, r) and not inside(r, workspace))

    def __enter__(self) -> "SandboxSession":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

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
        if sys.platform == "darwin":
            return self._popen_seatbelt(argv, cwd, env, stdin, stdout, stderr)
        if self._backend is not None:
            return self._backend.popen(argv, cwd, env, stdin, stdout, stderr)
        return self._popen_bwrap(argv, cwd, env, stdin, stdout, stderr)

    def passing_ctrl_c(self) -> "CtrlCPassedOn":
        """For a command the person runs (`gtd sandbox run -- npm run dev`): while the block runs, each
        Ctrl-C goes on to the command (`.to(proc)`) as SIGINT; see CtrlCPassedOn."""
        return CtrlCPassedOn(self)

    def _signal_command(self, proc: subprocess.Popen, signum: int) -> None:
        """Signal the process group of each command bwrap's namespace init started (as the host sees them)."""
        init = self._init_pids.get(proc.pid)
        try:
            with open(f"/proc/{init}/task/{init}/children") as f:
                commands = [int(pid) for pid in f.read().split()]
        except (OSError, TypeError, ValueError):
            commands = [proc.pid]  # unsandboxed (its own session), or already gone
        own = os.getpgid(0)
        for pid in commands:
            try:
                group = os.getpgid(pid)
                if group != own:
                    os.killpg(group, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def run(self, argv: Sequence[str], *, cwd, env: dict | None = None, timeout: float | None = None, input: bytes | None = None) -> subprocess.CompletedProcess:
        proc = self.popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, timeout, out, err) from None
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def environment(self, extra: dict | None = None) -> dict[str, str]:
        """The sandbox's minimal environment: no host secrets except the provider's own credential."""
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
        env.update(_tls_trust(os.environ, self.policy.deny_read))
        for key in self.policy.env_passthrough:
            if key in os.environ:
                env.setdefault(key, os.environ[key])  # never over gtd's own (HOME, TMPDIR, the proxy)
        if self._tools is not None:
            env.update(self._tools.environment())
        if self._caches is not None:
            env.update(self._caches.environment())
        env.update({k: str(v) for k, v in (extra or {}).items()})
        return env

    # -- Linux backend -----------------------------------------------------------------------
    def untrusted_dirs(self) -> tuple[Path, ...]:
        """Where the agent writes: PATH directories there are never searched for a program gtd runs on
        the host (gtd.host_programs)."""
        return (self.policy.workspace, *self.policy.writable)

    def _find_bwrap(self) -> str | None:
        from gtd.host_programs import host_program

        return host_program("bwrap", self.untrusted_dirs())

    def _sandbox_exec(self) -> str:
        from gtd.host_programs import host_program

        return host_program("sandbox-exec", self.untrusted_dirs()) or "/usr/bin/sandbox-exec"

    def _check_linux(self) -> None:
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable(f"no sandbox backend for {sys.platform}. {DOCTOR_HINT}")
        self._bwrap = self._find_bwrap()  # once per session: every command runs this one, by its path
        from gtd.sandbox.linux.backend_choice import announce, choose

        choice = choose(self.policy.backend, self._bwrap)
        if choice.name == "landlock":
            from gtd.sandbox.linux.landlock_backend import LandlockBackend

            self._backend = LandlockBackend(self, choice.reason)
            announce(choice)
            return
        if self._bwrap is None:
            raise SandboxUnavailable(
                "the sandbox is enabled but bubblewrap (bwrap) is not installed: install it "
                "(e.g. `apt-get install bubblewrap`), or set sandbox.enabled=false to run unsandboxed. " + DOCTOR_HINT
            )
        from gtd.sandbox.linux import userns

        if refused := userns.refusal():
            raise SandboxUnavailable(f"{refused}. {DOCTOR_HINT}")

    def _make_proxy(self):
        from gtd.sandbox.policy.domains import DomainRules
        from gtd.sandbox.network.proxy import FilteringProxy

        from gtd.sandbox.network.dns import StandInNames

        self._names = StandInNames()
        rules = DomainRules.parse(self.policy.reachable, self.policy.deny_domains)
        return FilteringProxy(rules, self.token, ask=self._ask if self._decider else None, on_denied=self._denied,
                              resolver=self._resolver)

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

    def _popen_bwrap(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        """Start the command under bwrap. If its network could not be set up (the command has not
        started yet: bwrap waits on --block-fd), start it again; only a repeated failure is reported."""
        for attempt in range(START_ATTEMPTS):
            try:
                return self._start_bwrap(argv, cwd, env, stdin, stdout, stderr)
            except _NetworkSetupFailed as exc:
                if attempt == START_ATTEMPTS - 1 or not exc.retryable:
                    raise SandboxUnavailable(f"cannot connect the sandbox to its proxy: {exc}. {DOCTOR_HINT}") from exc
        raise AssertionError("unreachable")

    def _namespace_layout(self):
        from gtd.sandbox.linux.netns import NamespaceLayout

        forwards = tuple(self.policy.host_loopback_ports)
        return NamespaceLayout(
            proxy_port=self.proxy_port,
            intercept_ports=tuple(p for p in self.policy.intercept_ports if p not in forwards),
            dns=True,
            forward_ports=forwards,
        )

    def _start_bwrap(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        from gtd.sandbox.linux.bwrap import render_mounts
        from gtd.sandbox.network.namespace_gateway import NamespaceGateway
        from gtd.sandbox.linux.netns import NamespaceHelper
        from gtd.sandbox.linux.seccomp import filter_fd
        from gtd.sandbox.stdio import relay_stdio

        from gtd.sandbox.policy.gitshim import with_shim

        policy = self.policy
        if self._caches is not None and self._caches.writable():
            from gtd.record import replace

            policy = replace(policy, writable=(*policy.writable, *self._caches.writable()))
        launch_args, launch_fds = self._layers.mounts()
        plan = render_mounts(policy, after=[*launch_args, *(self._tools.bwrap_args() if self._tools else ())])
        if plan.writes_reach(policy.workspace):
            if policy.git_state is not None and not policy.git_state.walked:
                plan.close()
                for fd in launch_fds:
                    os.close(fd)
                raise SandboxUnavailable(
                    "a writable directory in the work tree appeared after the sandbox policy was built (its nested "
                    "repositories were not checked): run the command again")
            self._tree_writable = True  # never reset: one such command is enough
        self._registry.add(self._created_files, placeholders=plan.placeholders, watched=plan.watched)
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        seccomp_r = filter_fd(self._program)
        args = [
            self._bwrap, *plan.args,
            "--chdir", str(Path(cwd).resolve()),
            "--seccomp", str(seccomp_r),
            "--info-fd", str(info_w),
            "--block-fd", str(block_r),
            "--", *self._layers.prefix(policy, plan.args), *argv,
        ]
        with self._lock:  # one command takes the spare cgroup, even when two start at once
            cgroup, self._spare_cgroup = self._spare_cgroup, None
        if cgroup is None:
            cgroup = self._layers.cgroup()
            if cgroup is not None:
                self._cgroups.append(cgroup)
        relay = relay_stdio(stdin, stdout, stderr)  # nothing reopenable through /proc/self/fd
        if self._caches is not None:
            args = self._caches.wrap(args)
        try:
            proc = subprocess.Popen(
                args, env=with_shim(self.environment(env), in_step=self._in_step), stdin=relay.stdin, stdout=relay.stdout, stderr=relay.stderr,
                pass_fds=(info_w, block_r, seccomp_r, *plan.fds, *launch_fds), start_new_session=True,
            )
        except BaseException:
            os.close(info_r)
            os.close(block_w)
            relay.abandon()
            raise
        finally:
            for fd in (info_w, block_r, seccomp_r, *launch_fds):
                os.close(fd)
            plan.close()
        relay.started()
        self._relays.append(relay)

        def network_failed(exc: OSError) -> Exception:
            if _exited_by_itself(proc):
                # bwrap died on its own (a mount it could not make): the namespace helper only failed
                # because of that. bwrap's own words come first, and starting again would fail the same way.
                return self._bwrap_failed(proc.returncode, policy)
            _kill_group(proc)
            proc.wait()
            # A relayed stdin has started flowing into the dead sandbox: starting again would lose it.
            return _NetworkSetupFailed(str(exc), retryable=relay.stdin is stdin)

        attaching = helper = None
        try:
            try:
                helper = NamespaceHelper(self._namespace_layout())  # forked while bwrap starts (netns.py)
            except OSError as exc:
                raise network_failed(exc) from exc
            info = _read_info(info_r)
            if info is None:
                proc.wait()
                raise self._bwrap_failed(proc.returncode, policy)
            # Moving a process into a cgroup waits for an RCU grace period (~10 ms; none shortly after start()
            # primed it): done while the mounts are verified and the network is set up, and finished before
            # the command may run.
            attaching = Background(cgroup.attach, proc.pid, int(info["child-pid"])) if cgroup is not None else None
            moved = plan.verify(int(info["child-pid"]), skip=self._caches.writable() if self._caches else ())
            if moved is not None and _exited_by_itself(proc):
                raise self._bwrap_failed(proc.returncode, policy)
            if moved is not None:
                _kill_group(proc)
                proc.wait()
                raise SandboxUnavailable(moved)
            try:
                self._inits.append(os.pidfd_open(int(info["child-pid"])))
                self._init_pids[proc.pid] = int(info["child-pid"])
            except OSError:
                pass  # already gone
            try:
                sockets = helper.sockets_for(int(info["child-pid"]))
            except OSError as exc:
                raise network_failed(exc) from exc
            gateway = NamespaceGateway(sockets, self._proxy, self._names)
            with self._lock:
                self._children.append((proc, _GatewayStarting(gateway, proc, int(info["child-pid"]))))
            if attaching is not None:
                attaching.join()  # before the command runs, so everything it starts is counted
            try:
                os.write(block_w, b"1")  # let bwrap exec the command
            except BrokenPipeError:
                pass  # the sandbox is gone: its gateway failed to start (_GatewayStarting said why) and killed it
        finally:
            if helper is not None:
                helper.close()
            if attaching is not None:
                attaching.join()
            os.close(info_r)
            os.close(block_w)
        return proc

    def _bwrap_failed(self, status: int | None, policy: SandboxPolicy) -> SandboxUnavailable:
        """The error for a bwrap that exited before the command ran, in bwrap's own words: the first line it
        prints when the same mounts are made again (its stderr is the command's, so the failed start's own
        line went wherever the command's output goes). Only when that start works does the minimal probe
        say what it can (user namespaces, an old bwrap)."""
        said = self._replay_mounts(policy)
        if said is None:
            said = _probe_bwrap(self._bwrap)
        else:
            from gtd.sandbox.linux import userns
            from gtd.sandbox.linux.bwrap import too_old

            cause = too_old(self._bwrap) or userns.restriction()  # what bwrap's line leaves unsaid, when it applies
            said = f"{said}; {cause}" if cause else said
        return SandboxUnavailable(f"bubblewrap could not create the sandbox (exit {status}): {said}. {DOCTOR_HINT}")

    def _replay_mounts(self, policy: SandboxPolicy) -> str | None:
        """bwrap's first line of error for this policy's mounts with `true` as the command, or None."""
        from gtd.sandbox.linux.bwrap import render_mounts

        fds: list[int] = []
        try:
            launch_args, launch_fds = self._layers.mounts()
            fds += launch_fds
            plan = render_mounts(policy, after=[*launch_args, *(self._tools.bwrap_args() if self._tools else ())])
            fds += plan.fds
            args = [self._bwrap, *plan.args, "--", "true"]
            if self._caches is not None:
                args = self._caches.wrap(args)
            result = subprocess.run(args, pass_fds=tuple(fds), stdin=subprocess.DEVNULL, capture_output=True,
                                    timeout=15)
        except (OSError, subprocess.SubprocessError, SandboxUnavailable):
            return None
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if result.returncode == 0:
            return None
        lines = [line.strip() for line in result.stderr.decode(errors="replace").splitlines() if line.strip()]
        return lines[0] if lines else None

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

    # -- macOS backend -----------------------------------------------------------------------
    def _start_proxy_on_host(self) -> None:
        import socket

        if which("sandbox-exec") is None:
            raise SandboxUnavailable(f"sandbox-exec not found. {DOCTOR_HINT}")
        self._proxy = self._make_proxy()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        self.proxy_port = listener.getsockname()[1]
        self._proxy.serve(listener)

    def _popen_seatbelt(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        from gtd.sandbox.macos.seatbelt import render_profile

        profile = render_profile(self.policy, proxy_port=self.proxy_port)
        self._tree_writable = True  # the profile is not inspected here: walk the tree as before
        proc = subprocess.Popen(
            [self._sandbox_exec(), "-p", profile, *argv], cwd=cwd, env=self.environment(env),
            stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
        )
        with self._lock:
            self._children.append((proc, None))
        return proc


class _GatewayStarting:
    """A NamespaceGateway whose threads are being started in the background (they need not be running
    before the command starts: its connections wait in the listeners' backlog); close() waits for the
    start to finish first. If the start fails, the sandbox is killed, its namespace init with it (killing
    bwrap alone left the command running: it was let go all the same), and gtd says why on its stderr."""

    def __init__(self, gateway, proc: subprocess.Popen, init_pid: int):
        self._gateway, self._proc = gateway, proc
        try:
            self._init: int | None = os.pidfd_open(init_pid)  # a pidfd: the pid may be reused once it is gone
        except OSError:
            self._init = None  # already gone, and everything inside with it
        self._starting = Background(gateway.start, on_error=self._failed)

    def _failed(self, exc: BaseException) -> None:
        from gtd.terminal_text import write

        write(f"gtd sandbox: the sandbox's network could not be started ({type(exc).__name__}: {exc}); "
              "the command was stopped\n", stream=sys.stderr)
        _kill_group(self._proc)
        if self._init is not None:
            try:
                signal.pidfd_send_signal(self._init, signal.SIGKILL)  # pid 1 of its namespace: all of it goes
            except OSError:
                pass

    def close(self) -> None:
        self._starting.join()
        init, self._init = self._init, None
        if init is not None:
            os.close(init)
        self._gateway.close()


class _NetworkSetupFailed(Exception):
    """The sandbox's network namespace could not be equipped; the command never started."""

    def __init__(self, message: str, *, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


def _token() -> str:
    """The proxy's password: 24 bytes of os.urandom (as secrets.token_urlsafe(24) takes), spelled in hex,
    without importing `secrets` (hmac, hashlib and random: ~5 ms of every `gtd sandbox run`) or base64's
    encoder (binascii, a shared library: ~0.3 ms)."""
    return os.urandom(24).hex()


def open_sandbox(policy: SandboxPolicy, **kw) -> SandboxSession:
    """A started session (use it as a context manager or call close()). Raises SandboxUnavailable."""
    return SandboxSession(policy, **kw).start()


def _tls_trust(environ, deny_read) -> dict[str, str]:
    """The TLS trust variables worth passing: a flag (`UV_NATIVE_TLS=1`) or an absolute path that
    exists and is not hidden from the sandbox (a hidden bundle would only turn into a confusing
    verification error)."""
    found: dict[str, str] = {}
    passes: dict[str, bool] = {}  # by value: a machine often names one bundle in a dozen of them
    for key in TLS_TRUST_VARS:
        value = environ.get(key, "")
        if not value:
            continue
        if key == "UV_NATIVE_TLS":
            found[key] = value
            continue
        if value not in passes:
            passes[value] = _readable_bundle(value, deny_read)
        if passes[value]:
            found[key] = value
    return found


def _readable_bundle(value: str, deny_read) -> bool:
    """An absolute path that exists and is not hidden from the sandbox (by its own spelling or resolved)."""
    try:
        real = os.path.realpath(value)
    except OSError:  # leads where gtd may not resolve: not passed
        return False
    if not os.path.isabs(value) or not os.path.exists(real):
        return False
    spellings = {real, os.path.normpath(value)}
    return not any(inside(p, d) for d in deny_read for p in spellings)


def _read_info(fd: int) -> dict | None:
    buf = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        buf += chunk
        try:
            return json.loads(buf)
        except ValueError:
            continue


def _exited_by_itself(proc: subprocess.Popen, grace: float = 0.5) -> bool:
    """True when bwrap has exited (or does within `grace` seconds) without being killed: the sign that a
    later step of the start failed only because bwrap had already died."""
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        return False
    return True


def _probe_bwrap(bwrap: str) -> str:
    """bwrap's own explanation, from a minimal run (user namespace, network namespace)."""
    try:
        r = subprocess.run(
            [bwrap, "--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "true"],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if r.returncode:
        from gtd.sandbox.linux import userns

        said = r.stderr.strip() or f"minimal bwrap run exited {r.returncode}"
        return f"{said}; {restricted}" if (restricted := userns.restriction()) else said
    from gtd.sandbox.linux.bwrap import too_old

    return too_old(bwrap) or "bwrap works in a minimal run; check the paths in the policy"


class CtrlCPassedOn:
    """Each Ctrl-C reaches the command as SIGINT to its process group, as the terminal would send it
    (bwrap's new session keeps the terminal's own from reaching it): a server shuts down cleanly, an
    interactive shell keeps running. The third within KILL_PRESSES_SECONDS kills it. Counted by a handler
    installed before the command starts, not by KeyboardInterrupt: one pressed during start-up, or while
    Popen.wait pauses after a first one, would be lost. Main thread only."""

    def __init__(self, session: "SandboxSession"):
        self._session = session
        self._proc: subprocess.Popen | None = None
        self._presses: list[float] = []
        self._previous = None

    def __enter__(self) -> "CtrlCPassedOn":
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # started immune (`nohup`, `cmd &`): stays so
            self._previous = signal.signal(signal.SIGINT, self._on_ctrl_c)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def to(self, proc: subprocess.Popen) -> None:
        """The command started: presses made while it was starting reach it now."""
        self._proc = proc
        if self._presses:
            self._pass_on()

    def wait(self) -> int:
        """The command's exit status, waited for so that every signal is handled at once. A signal may be
        delivered to any of gtd's threads (the proxy's, the stdio pumps'); Python runs its handler only
        when the main thread next runs, and a main thread blocked in waitpid() would not until the
        command ended: a Ctrl-C, or the SIGTERM that ends gtd through its clean-up, was then lost. The
        signal's wake-up byte ends the wait instead."""
        proc = self._proc
        try:
            wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        except AttributeError:  # macOS: no pipe2
            wake_r, wake_w = os.pipe()
            os.set_blocking(wake_r, False)
            os.set_blocking(wake_w, False)
        try:
            previous = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: its signals are not this thread's to handle
            os.close(wake_r)
            os.close(wake_w)
            return proc.wait()
        try:
            pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # not Linux >= 5.3 (or already reaped): look every 50 ms
            pidfd = None
        import select

        try:
            while proc.poll() is None:  # each pass runs the handlers of the signals that woke it
                select.select([wake_r] + ([pidfd] if pidfd is not None else []), [], [],
                              None if pidfd is not None else 0.05)
                try:
                    os.read(wake_r, 512)
                except BlockingIOError:
                    pass
        finally:
            signal.set_wakeup_fd(previous)
            for fd in (wake_r, wake_w) + ((pidfd,) if pidfd is not None else ()):
                os.close(fd)
        return proc.returncode

    def _on_ctrl_c(self, signum, frame) -> None:
        now = time.monotonic()
        self._presses = [t for t in self._presses if now - t < KILL_PRESSES_SECONDS] + [now]
        if self._proc is not None:
            self._pass_on()

    def _pass_on(self) -> None:
        if len(self._presses) >= 3:
            _kill_group(self._proc)
            self._proc.kill()
        else:
            self._session._signal_command(self._proc, signal.SIGINT)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
