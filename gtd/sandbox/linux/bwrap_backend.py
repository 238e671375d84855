"""The bubblewrap backend: each command in its own user, mount, PID and network namespaces, under
gtd's seccomp filter, with Landlock and resource limits applied by the launcher inside (kernel.py), the
network served from the host through the namespace's sockets (network/namespace_gateway.py), and
package caches layered per project (policy/caches.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gtd.background import Background
from gtd.errors import SandboxUnavailable
from gtd.sandbox.backend import DOCTOR_HINT, Backend
from gtd.sandbox.command_signals import kill_group
from gtd.sandbox.events import Violation

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from gtd.sandbox.policy.sandbox_policy import SandboxPolicy

START_ATTEMPTS = 3  # a sandbox whose network could not be set up is started again (it has not run anything)


class BwrapBackend(Backend):
    name = "bwrap"
    binds_files = True  # its registry settings files are gtd's own, bound by the mount plan (policy.generated_files)
    serves_model_gateway = True  # on 127.0.0.1:GATEWAY_PORT inside each sandbox's network namespace

    def __init__(self, session):
        super().__init__(session)
        self.bwrap: str | None = None  # bubblewrap's path, found by start() outside the workspace (host_programs)
        self.layers = None  # Landlock and resource limits under bwrap (linux/kernel.py)
        self.program: bytes | None = None  # the seccomp filter, compiled once
        self.caches = None  # the package-cache layer (policy/caches.py)
        self.cgroups = None  # one per sandboxed command (limits.CommandCgroups), removed once everything inside is gone
        self._inits: list[int] = []  # pidfds of each sandbox's pid-namespace init (bwrap's child)
        self._init_pids: dict[int, int] = {}  # bwrap's pid -> its namespace init's pid (as the host sees it)
        self.tls = None  # pip's repeated refusals answered inside TLS (network/refusal_tls.py)
        self._watches: list = []  # each command's write watch (linux/write_watch.py)

    def start(self) -> None:
        s = self.session
        self._check_linux()
        from gtd.sandbox.linux.kernel import KernelLayers

        # First, so the priming cgroup move's grace period (~10-15 ms) runs while the rest is set up.
        self.layers = KernelLayers.for_policy(s.policy)
        from gtd.sandbox.linux.limits import CommandCgroups

        self.cgroups = CommandCgroups(self.layers.cgroup)
        if self.layers.cgroups:  # the first command's cgroup move then waits for nothing
            from gtd.sandbox.linux.limits import prime_moves, take_ready

            # The first command's cgroup is made before the priming move starts: a mkdir in a cgroup
            # hierarchy waits for a move in flight and would stall the first command's start here.
            # `gtd sandbox run` made both before building the policy (limits.make_ready).
            ready = take_ready(self.layers.limits, self.layers.cgroups)
            self.cgroups.keep_spare(ready or self.layers.cgroup())
            if ready is None:
                Background(prime_moves)
        from gtd.sandbox.linux.seccomp import cached_filter

        try:
            self.program = cached_filter()
        except (OSError, ImportError, AttributeError) as exc:
            raise SandboxUnavailable(f"cannot build the seccomp filter (libseccomp): {exc}. {DOCTOR_HINT}") from exc
        s.make_proxy()
        self.tls = self._tls_refusals()
        s._proxy.tls_refusals = self.tls
        from gtd.sandbox.linux.cache_layer import CacheLayer

        self.caches = CacheLayer(s.policy.caches, s.policy.workspace, untrusted=s.untrusted_dirs()).start()

    def prepare_host(self, registry) -> None:
        from gtd.sandbox.host.hostcreate import make_placeholder_parents
        from gtd.sandbox.linux.writable_roots import placeholder_parents

        make_placeholder_parents(placeholder_parents(self.session.policy), registry)

    def environment(self) -> dict[str, str]:
        env = self.caches.environment() if self.caches is not None else {}
        if self.tls is not None:  # over the person's PIP_CERT & co.: the copy holds their bundle
            env.update(self.tls.environment(f"http://gtd:{self.session.token}@127.0.0.1:{self.session.proxy_port}"))
        return env

    def _tls_refusals(self):
        """pip's share of the proxy's refusals (refusal_tls), when the host has `openssl` and a CA bundle."""
        from gtd.host_programs import host_program
        from gtd.sandbox.network.refusal_tls import TlsRefusals, pip_trust
        from gtd.sandbox.policy.command_env import tls_trust

        s = self.session
        openssl = host_program("openssl", s.untrusted_dirs())
        trust = pip_trust(tls_trust(os.environ, s.policy.deny_read))
        if openssl is None or trust is None:
            return None
        try:
            return TlsRefusals(openssl, *trust)
        except OSError:
            return None

    def _write_watch(self, policy):
        """A write watch for one command (write_watch.py), or None where seccomp cannot notify."""
        from gtd.sandbox.linux.write_watch import for_command

        s = self.session
        watch = for_command(policy, lambda path, reason: s.record_violation(
            Violation.now("write", path, policy.level, reason)))
        if watch is not None:
            self._watches.append(watch)
        return watch

    def own_mounts(self) -> list[str]:
        """The session's files bound over the policy's: the sanitized tool settings, pip's CA bundle."""
        s = self.session
        return [*(s._tools.bwrap_args() if s._tools else ()), *(self.tls.bwrap_args() if self.tls else ())]

    def popen(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        return self._popen_bwrap(argv, cwd, env, stdin, stdout, stderr)

    def close(self) -> None:
        s = self.session
        self._wait_for_inits()
        if self.caches is not None:
            self.caches.close()
        if self.cgroups is not None:
            self.cgroups.close(s.limit_hit)
        for watch in self._watches:
            watch.close()
        self._watches.clear()
        if self.tls is not None:
            self.tls.close()
            self.tls = None

    def _check_linux(self) -> None:
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable(f"no sandbox backend for {sys.platform}. {DOCTOR_HINT}")
        from gtd.host_programs import host_program

        self.bwrap = host_program("bwrap", self.session.untrusted_dirs())  # once per session: every command runs this one
        if self.bwrap is None:
            raise SandboxUnavailable(
                "the sandbox is enabled but bubblewrap (bwrap) is not installed: install it "
                "(e.g. `apt-get install bubblewrap`), or set sandbox.enabled=false to run unsandboxed. " + DOCTOR_HINT
            )
        from gtd.sandbox.linux import userns

        if refused := userns.refusal():
            raise SandboxUnavailable(f"{refused}. {DOCTOR_HINT}")

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
        s = self.session
        from gtd.sandbox.linux.netns import NamespaceLayout

        from gtd.sandbox.network.credential_gateway import GATEWAY_PORT

        forwards = tuple(s.policy.host_loopback_ports)
        return NamespaceLayout(
            proxy_port=s.proxy_port,
            intercept_ports=tuple(p for p in s.policy.intercept_ports if p not in forwards),
            dns=True,
            forward_ports=tuple(p for p in forwards if p != GATEWAY_PORT),
            gateway_port=GATEWAY_PORT if s.credentials is not None else None,
        )

    def _login_stand_ins(self) -> tuple[list[str], list[int]]:
        """bwrap arguments (and their fds) that put each login's placeholder file where the CLI looks for its
        login, read-only: the real one stays on the host (network/credential_gateway.py)."""
        credentials = self.session.credentials
        if credentials is None:
            return [], []
        from gtd.sandbox.linux.bwrap import data_fd

        args: list[str] = []
        fds: list[int] = []
        for target, stand_in in credentials.login_files():
            fds.append(data_fd(stand_in))
            args += ["--ro-bind-data", str(fds[-1]), target]
        return args, fds

    def _start_bwrap(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        s = self.session
        from gtd.sandbox.linux.bwrap import render_mounts
        from gtd.sandbox.linux.netns import NamespaceHelper
        from gtd.sandbox.linux.seccomp import filter_fd
        from gtd.sandbox.network.namespace_gateway import NamespaceGateway
        from gtd.sandbox.policy.gitshim import with_shim
        from gtd.sandbox.stdio import relay_stdio

        policy = s.policy
        if self.caches is not None and self.caches.writable():
            from gtd.record import replace

            policy = replace(policy, writable=(*policy.writable, *self.caches.writable()))
        launch_args, launch_fds = self.layers.mounts()
        login_args, login_fds = self._login_stand_ins()
        launch_fds = [*launch_fds, *login_fds]
        plan = render_mounts(policy, after=[*launch_args, *self.own_mounts(), *login_args])
        if plan.writes_reach(policy.workspace):
            if policy.git_state is not None and not policy.git_state.walked:
                plan.close()
                for fd in launch_fds:
                    os.close(fd)
                raise SandboxUnavailable(
                    "a writable directory in the work tree appeared after the sandbox policy was built (its nested "
                    "repositories were not checked): run the command again")
            s._tree_writable = True  # never reset: one such command is enough
        s._registry.add(s._created_files, placeholders=plan.placeholders, watched=plan.watched)
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        seccomp_r = filter_fd(self.program)
        args = [
            self.bwrap, *plan.args,
            "--chdir", str(Path(cwd).resolve()),
            "--seccomp", str(seccomp_r),
            "--info-fd", str(info_w),
            "--block-fd", str(block_r),
            "--",
        ]
        from gtd.sandbox.linux.start_hold import StartHold

        watch, hold = self._write_watch(policy), StartHold()  # a command never runs once gtd is gone
        prefix = self.layers.prefix(policy, plan.args, watch=watch.launcher_args() if watch else (),
                                    hold=hold.launcher_args())
        args += [*prefix, *argv]
        if "--hold" not in prefix:  # no launcher runs inside
            hold.close()
            if watch is not None:
                watch.close()
            watch = hold = None
        cgroup = self.cgroups.take()
        relay = relay_stdio(stdin, stdout, stderr)  # nothing reopenable through /proc/self/fd
        if self.caches is not None:
            args = self.caches.wrap(args)
        try:
            proc = subprocess.Popen(
                args, env=with_shim(s.environment(env), in_step=s._in_step), stdin=relay.stdin, stdout=relay.stdout, stderr=relay.stderr,
                pass_fds=(info_w, block_r, seccomp_r, *plan.fds, *launch_fds, *(watch.fds if watch else ()),
                          *([hold.fd] if hold else ())),
                start_new_session=True,
            )
        except BaseException:
            os.close(info_r)
            os.close(block_w)
            relay.abandon()
            if hold is not None:
                hold.close()
            raise
        finally:
            for fd in (info_w, block_r, seccomp_r, *launch_fds):
                os.close(fd)
            plan.close()
            if watch is not None:
                watch.started()
            if hold is not None:
                hold.started()
        relay.started()
        s._relays.append(relay)

        def network_failed(exc: OSError) -> Exception:
            if _exited_by_itself(proc):
                # bwrap died on its own (a mount it could not make): the namespace helper only failed
                # because of that. bwrap's own words come first, and starting again would fail the same way.
                return self._bwrap_failed(proc.returncode, policy)
            kill_group(proc)
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
            moved = plan.verify(int(info["child-pid"]), skip=self.caches.writable() if self.caches else ())
            if moved is not None and _exited_by_itself(proc):
                raise self._bwrap_failed(proc.returncode, policy)
            if moved is not None:
                kill_group(proc)
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
            gateway = NamespaceGateway(sockets, s._proxy, s._names, s.credentials)
            with s._lock:
                s._children.append((proc, _GatewayStarting(gateway, proc, int(info["child-pid"]))))
            if attaching is not None:
                attaching.join()  # before the command runs, so everything it starts is counted
            try:
                os.write(block_w, b"1")  # let bwrap exec the command (the launcher first, which asks gtd again)
                if hold is not None:
                    hold.release()
            except BrokenPipeError:
                pass  # the sandbox is gone: its gateway failed to start (_GatewayStarting said why) and killed it
        finally:
            if helper is not None:
                helper.close()
            if attaching is not None:
                attaching.join()
            os.close(info_r)
            os.close(block_w)
            if hold is not None:
                hold.close()  # unless released: the launcher's answer is then its thread's
        return proc

    def _bwrap_failed(self, status: int | None, policy: SandboxPolicy) -> SandboxUnavailable:
        """The error for a bwrap that exited before the command ran, in bwrap's own words: the first line it
        prints when the same mounts are made again (its stderr is the command's, so the failed start's own
        line went wherever the command's output goes). Only when that start works does the minimal probe
        say what it can (user namespaces, an old bwrap)."""
        said = self._replay_mounts(policy)
        if said is None:
            said = _probe_bwrap(self.bwrap)
        else:
            from gtd.sandbox.linux import userns
            from gtd.sandbox.linux.bwrap import too_old

            cause = too_old(self.bwrap) or userns.restriction()  # what bwrap's line leaves unsaid, when it applies
            said = f"{said}; {cause}" if cause else said
        return SandboxUnavailable(f"bubblewrap could not create the sandbox (exit {status}): {said}. {DOCTOR_HINT}")

    def _replay_mounts(self, policy: SandboxPolicy) -> str | None:
        """bwrap's first line of error for this policy's mounts with `true` as the command, or None."""
        from gtd.sandbox.linux.bwrap import render_mounts

        fds: list[int] = []
        try:
            launch_args, launch_fds = self.layers.mounts()
            fds += launch_fds
            plan = render_mounts(policy, after=[*launch_args, *self.own_mounts()])
            fds += plan.fds
            args = [self.bwrap, *plan.args, "--", "true"]
            if self.caches is not None:
                args = self.caches.wrap(args)
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

    def signal_command(self, proc: subprocess.Popen, signum: int) -> None:
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
        kill_group(self._proc)
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
