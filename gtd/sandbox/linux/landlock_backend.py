"""The Landlock backend: a sandbox where bubblewrap cannot create its namespaces (docs/landlock-backend.md).

No mount, network or PID namespace: each command runs on the host's filesystem, network and process
table, held by what the kernel gives an unprivileged process instead, applied by the launcher
(launch.c / launch.py --contain) right before exec:
- Landlock path rules (landlock_rules.py): reads beneath the visible roots only, writes beneath the
  writable ones only, protected paths left out entry by entry;
- Landlock TCP rules (ABI 4+): connect only to gtd's proxy (on the host's loopback, as on macOS) and
  the policy's host loopback ports; bind to none; signals and abstract unix sockets scoped (ABI 6+);
- the seccomp filter with `contained_sockets` (no UDP, raw, SCTP, MPTCP, io_uring, AF_UNIX);
- no capabilities, no_new_privs, the session's resource limits and cgroup; the launcher stays the
  command's parent and subreaper (a PID namespace's init, in effect), and gtd the launchers' subreaper.
It fails closed: without Landlock ABI 4 it refuses to start (SandboxUnavailable) rather than run with
direct network.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from gtd.errors import SandboxUnavailable
from gtd.sandbox.backend import DOCTOR_HINT, Backend, loopback_listener, serve_gateway_on_loopback
from gtd.sandbox.events import Violation

MIN_ABI = 4  # TCP connect rules: without them the network would be open


class LandlockBackend(Backend):
    """Chosen by backend_choice where bubblewrap cannot create its namespaces (or by `sandbox.backend`)."""

    name = "landlock"
    binds_files = False  # no mounts: the registry settings are not bound over the originals (hidden instead)
    serves_model_gateway = True  # on the host's loopback, beside the proxy (its port in the TCP rules)

    def __init__(self, session, reason: str):
        super().__init__(session)
        self.reason = reason  # why bwrap is not used (backend_choice)
        self.layers = None  # Landlock ABI, resource limits, cgroups (linux/kernel.py)
        self.cgroups = None  # one per sandboxed command (limits.CommandCgroups), killed and removed at close
        self._copies = None  # protected paths in writable roots outside the workspace (host/protected_copies.py)
        self._kept_roots: set[str] = set()
        self._split_roots: set[str] = set()
        self._program: bytes | None = None
        self._listener: socket.socket | None = None
        self._gateway_listener: socket.socket | None = None
        self._tmp: Path | None = None
        self._settings_env: dict[str, str] = {}  # the generated settings files, named for their tools
        self._launcher: list[str] = []
        self._started: dict[int, subprocess.Popen] = {}  # the launchers (subprocess waits for them, not the sweep)
        self._modes: dict = {}  # the work tree's protected paths' modes at start (host/mode_guard.py)
        self._watches: list = []  # each command's write watch (write_watch.py, asked as landlock_watch.py says)

    def start(self) -> None:
        s = self.session
        from gtd.sandbox.linux.kernel import KernelLayers

        self.layers = KernelLayers.for_policy(s.policy)
        from gtd.sandbox.linux.limits import CommandCgroups

        self.cgroups = CommandCgroups(self.layers.cgroup)
        if self.layers.cgroups:  # `gtd sandbox run` made the first command's cgroup ahead (limits.make_ready)
            from gtd.sandbox.linux.limits import take_ready

            self.cgroups.keep_spare(take_ready(self.layers.limits, self.layers.cgroups))
        abi = self.layers.landlock_abi
        if abi < MIN_ABI:
            raise SandboxUnavailable(
                f"{self.reason}, and the Landlock backend needs Landlock ABI {MIN_ABI}+ (Linux 6.7+) for its network "
                f"rules; this kernel gives {'ABI ' + str(abi) if abi else 'no Landlock'}. Allow user namespaces for "
                f"bubblewrap or use a newer kernel with Landlock enabled. {DOCTOR_HINT}")
        from gtd.sandbox.linux.seccomp import cached_filter

        try:
            self._program = cached_filter(contained_sockets=True)
        except (OSError, ImportError, AttributeError) as exc:
            raise SandboxUnavailable(f"cannot build the seccomp filter (libseccomp): {exc}. {DOCTOR_HINT}") from exc
        self._launcher = _launcher()
        _become_subreaper()
        s.make_proxy()
        listener = loopback_listener()
        self._listener = listener
        s.proxy_port = listener.getsockname()[1]
        s._proxy.serve(listener)
        if s.credentials is not None:
            self._serve_model_gateway(s.credentials)
        from gtd.sandbox.linux.landlock_rules import private_tmp_dir

        self._tmp = private_tmp_dir()
        self._settings_env = _write_generated_files(s.policy, self._tmp)
        from gtd.sandbox.host.mode_guard import record_modes
        from gtd.sandbox.policy.containment import inside

        # Landlock does not cover chmod: the work tree's protected paths get their modes back at the end.
        self._modes = record_modes([p for p in s.policy.protected if inside(p, s.policy.workspace)])
        from gtd.sandbox.linux.backend_choice import announce

        announce(self.reason)

    def _serve_model_gateway(self, credentials) -> None:
        """The model credential gateway on the host's loopback (no namespace to put it in): the CLI's base URL
        names its port and the TCP rules allow it (backend.serve_gateway_on_loopback)."""
        self._gateway_listener = serve_gateway_on_loopback(credentials)
        self.gateway_port = self._gateway_listener.getsockname()[1]

    def _keep_copies(self, root: str) -> bool:
        """Copy the protected paths of a writable root outside the workspace (once per session), so it can be
        granted whole; True (split it instead) when they are too big to copy."""
        from gtd.sandbox.host.protected_copies import ProtectedCopies, TooBig
        from gtd.sandbox.linux.landlock_rules import _both, _outermost_existing

        if root in self._split_roots:
            return True
        if root in self._kept_roots:
            return False
        if self._copies is None:
            from gtd import paths

            self._copies = ProtectedCopies(paths.user_state_dir() / "landlock-copies" / f"{os.getpid()}-{id(self)}")
        try:
            self._copies.keep(Path(root), _outermost_existing(root, _both(self.session.policy.protected)))
        except (TooBig, OSError):
            self._split_roots.add(root)
            return True
        self._kept_roots.add(root)
        return False

    def prepare_host(self, registry) -> None:
        """Nothing: bwrap's placeholder mount points have no counterpart here."""

    def environment(self) -> dict[str, str]:
        """What the session's environment changes here: TMPDIR is the private dir (/tmp is not readable),
        the generated settings files are named by their tools' variables (no mount puts them in HOME)."""
        env = {"TMPDIR": str(self._tmp), "GTD_SANDBOX_BACKEND": "landlock"}
        cache_home = os.environ.get("XDG_CACHE_HOME") or str(self.session.policy.home / ".cache")
        if not os.path.isdir(cache_home):
            # Nothing there to read, and HOME takes no new entries here (under bwrap its mount points made
            # one): tools that create their cache dir (pip's build) get a private one instead of EACCES.
            env["XDG_CACHE_HOME"] = str(self._tmp / ".cache")
        env.update(self._settings_env)
        return env

    def popen(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        from gtd.sandbox.linux.writable_roots import writable_roots
        from gtd.sandbox.policy.gitshim import with_shim
        from gtd.sandbox.linux.landlock_rules import rules_for
        from gtd.sandbox.linux.limits import launcher_args
        from gtd.sandbox.linux.seccomp import filter_fd
        from gtd.sandbox.stdio import relay_stdio

        s = self.session
        policy = s.policy
        if policy.git_state is not None and not policy.git_state.walked and _reaches(policy):
            raise SandboxUnavailable(
                "a writable directory in the work tree appeared after the sandbox policy was built (its nested "
                "repositories were not checked): run the command again")
        rules = rules_for(policy, writable_roots(policy), self._tmp, split=self._keep_copies)
        if rules.reaches_workspace:
            s._tree_writable = True
        s._registry.add(s._created_files, watched=rules.watched)
        ports = [s.proxy_port, *([self.gateway_port] if self.gateway_port else []), *policy.host_loopback_ports]
        block_r, block_w = os.pipe()
        seccomp_r = filter_fd(self._program)
        watch = self._write_watch(rules.writes)
        args = [*self._launcher, *launcher_args(policy.limits), "--landlock", str(self.layers.landlock_abi),
                "--contain", "1", *rules.launcher_args(), *[a for p in ports for a in ("--connect", str(p))],
                "--seccomp", str(seccomp_r), "--block", str(block_r), *(watch.launcher_args() if watch else ()),
                "--", *argv]
        cgroup = self.cgroups.take()
        relay = relay_stdio(stdin, stdout, stderr)
        environment = s.environment(env)
        try:
            proc = subprocess.Popen(
                args, cwd=str(Path(cwd).resolve()), env=with_shim(environment, in_step=s._in_step),
                stdin=relay.stdin, stdout=relay.stdout, stderr=relay.stderr,
                pass_fds=(block_r, seccomp_r, *(watch.fds if watch else ())), start_new_session=True,
            )
        except BaseException:
            relay.abandon()
            os.close(block_w)
            raise
        finally:
            os.close(block_r)
            os.close(seccomp_r)
            if watch is not None:
                watch.started()
        relay.started()
        s._relays.append(relay)
        try:
            if cgroup is not None:
                cgroup.attach(proc.pid)  # before the launcher goes on: everything the command starts is counted
            os.write(block_w, b"1")
        except BrokenPipeError:
            pass  # the launcher is gone already: its exit status says why
        finally:
            os.close(block_w)
        with s._lock:
            s._children.append((proc, None))
        self._started[proc.pid] = proc
        return proc

    def _write_watch(self, writes: list[str]):
        """A write watch for one command (write_watch.py) that counts as refused what these Landlock rules
        refuse (landlock_watch.py), or None where seccomp cannot notify."""
        from gtd.sandbox.linux.landlock_watch import LandlockRefusals
        from gtd.sandbox.linux.write_watch import for_command

        s = self.session
        policy = s.policy
        watch = for_command(policy, lambda path, reason: s.record_violation(
            Violation.now("write", path, policy.level, reason)), LandlockRefusals(writes))
        if watch is not None:
            self._watches.append(watch)
        return watch

    def close(self) -> None:
        """After the session killed each command's group: kill what left it (through the cgroup, and as the
        orphans' subreaper), so nothing inside can still write; stop serving; remove the private tmp dir."""
        s = self.session
        for cgroup in self.cgroups.all if self.cgroups is not None else ():
            cgroup.kill()
        for proc in self._started.values():
            try:
                proc.wait(timeout=5)  # once it is gone, what it adopted has come to gtd
            except subprocess.TimeoutExpired:
                pass
        _kill_orphans(set(self._started))
        for watch in self._watches:  # every process under its filter is gone
            watch.close()
        self._watches.clear()
        if self.cgroups is not None:
            self.cgroups.close(s.limit_hit)
        from gtd.sandbox.host.mode_guard import put_back

        for path, what in put_back(self._modes):  # everything inside is gone: undo its chmods
            s.record_violation(Violation.now("write", str(path), s.policy.level, what))
        if self._copies is not None:  # everything inside is gone: put back what it changed
            from gtd import paths

            into = paths.project_state_dir(s.policy.workspace) / "quarantine"
            for path, what in self._copies.restore(into):
                s.record_violation(Violation.now("write", str(path), s.policy.level, what))
            self._copies.close()
            self._copies = None
        if self._gateway_listener is not None and s.credentials is not None:
            s.credentials.stop_serving(self._gateway_listener)
            self._gateway_listener = None
        if self._listener is not None and self.session._proxy is not None:
            self.session._proxy.stop_serving(self._listener)
            self._listener = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _become_subreaper() -> None:
    """gtd adopts what a sandboxed command orphans (a daemon that left its process group with setsid), so
    close() finds it without a cgroup or a PID namespace (_kill_orphans)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), ctypes.c_ulong(0),
                                            ctypes.c_ulong(0), ctypes.c_ulong(0))


PR_SET_CHILD_SUBREAPER = 36


def _kill_orphans(started, rounds: int = 50) -> None:
    """SIGKILL and reap gtd's children that run under more seccomp filters than gtd itself: sandboxed
    processes adopted by gtd (the subreaper), not gtd's own helpers (host git). Repeated, as killing one
    hands its children to gtd in turn. The launchers (`started`) are subprocess's to wait for."""
    from gtd.sandbox.linux.contain import kill_and_reap

    own = _filters(os.getpid())
    for _ in range(rounds):
        found = [pid for pid in _children() if pid not in started and _filters(pid) > own]
        if not found:
            return
        kill_and_reap(found)


def _children() -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                found += [int(pid) for pid in f.read().split()]
        except (OSError, ValueError):
            pass
    return found


def _filters(pid: int) -> int:
    """How many seccomp filters `pid` runs under (-1 when unknown)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Seccomp_filters:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


def _reaches(policy) -> bool:
    from gtd.sandbox.policy.containment import inside

    return any(inside(w, policy.workspace) or inside(policy.workspace, w) for w in policy.writable if os.path.isdir(w))


def _launcher() -> list[str]:
    """The launcher's command prefix: the native build where there is one (nativelaunch), else launch.py.
    Both live where the sandbox cannot write (gtd's install or state dir)."""
    from gtd.sandbox.linux.nativelaunch import launcher_path

    native = launcher_path()
    if native is not None:
        return [str(native)]
    from gtd.sandbox.linux.kernel import LAUNCHER

    return [os.path.realpath(sys.executable), "-I", "-S", str(LAUNCHER)]


# No mount puts gtd's generated settings files where their tools look in HOME (HOME is hidden, and takes no new
# entries here): each is written into the private tmp dir and named by the variable its tool reads instead.
# Cargo and Gradle get a private home holding theirs (tool_homes.py); yarn's rc files and pnpm's own rc are not
# seen here (docs/landlock-backend.md).
NAMED_BY = {".gitconfig": "GIT_CONFIG_GLOBAL", "pip.conf": "PIP_CONFIG_FILE", "uv.toml": "UV_CONFIG_FILE",
            ".npmrc": "NPM_CONFIG_USERCONFIG", "env": "GOENV", "settings.xml": "MAVEN_ARGS"}


def _write_generated_files(policy, tmp: Path) -> dict[str, str]:
    """gtd's generated settings files (credentials left out) in `tmp`, and the variables that name them."""
    from gtd.sandbox.linux.tool_homes import tool_home_environment

    env: dict[str, str] = {}
    others = []
    for target, text, _ in policy.generated_files if policy.home_hidden else ():
        var = NAMED_BY.get(target.name)
        if var is None or (target.name == "env" and target.parent.name != "go"):
            others.append((target, text))
            continue
        written = tmp / "settings" / f"{len(env)}-{target.name}"
        written.parent.mkdir(exist_ok=True)
        written.write_text(text, encoding="utf-8", errors="surrogateescape")
        env[var] = f"-s {written}" if var == "MAVEN_ARGS" else str(written)  # the last pip.conf: pip's own order
    env.update(tool_home_environment(others, policy.home, tmp, os.environ))
    return env
