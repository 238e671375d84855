"""The kernel layers gtd adds under bubblewrap's mounts and seccomp: Landlock (writes only beneath
the policy's writable paths) and resource limits (cgroup and rlimits). Decided once per session;
each sandboxed command then gets the launcher prefix (native: launch.c via nativelaunch.py, else
sandbox/linux/launch.py) and its own cgroup.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gtd.record import field, record
from gtd.sandbox.linux.limits import CgroupLimit, cgroup_support, launcher_args
from gtd.sandbox.policy.resource_limits import ResourceLimits

LAUNCHER = Path(__file__).with_name("launch.py")
# Private to each sandbox (bwrap's own tmpfs, device dir and procfs): always writable. /proc's magic
# links (/proc/self/fd/N) are checked against the file they lead to, not against /proc.
PRIVATE_WRITABLE = ("/tmp", "/dev", "/proc")


def landlock_writable(policy, bwrap_args: list[str] | None = None) -> list[str]:
    """The policy's writable paths as bubblewrap binds them (existing, outside every protected and
    hidden path, resolved), kept only where `bwrap_args` really binds them read-write (`--bind P P`):
    Landlock never allows a write that the mounts refuse, whatever render_mounts decides."""
    from gtd.sandbox.linux.writable_roots import writable_roots

    paths = list(dict.fromkeys(str(root.real) for root in writable_roots(policy)))
    if bwrap_args is not None:
        bound = {bwrap_args[i + 1] for i in range(len(bwrap_args) - 2)
                 if bwrap_args[i] == "--bind" and bwrap_args[i + 1] == bwrap_args[i + 2]}
        paths = [p for p in paths if p in bound]
    return paths + list(PRIVATE_WRITABLE)


@record
class KernelLayers:
    policy: object
    landlock_abi: int
    limits: ResourceLimits
    cgroups: dict = field(default_factory=dict)  # controller -> (version, parent dir)
    native: bytes | None = None  # the built native launcher (nativelaunch.py); None: launch.py

    @classmethod
    def for_policy(cls, policy) -> "KernelLayers":
        from gtd.sandbox.linux.nativelaunch import launcher_bytes

        limits = policy.limits
        abi = landlock_abi()
        native = launcher_bytes() if (abi or limits.processes or limits.memory) else None
        return cls(policy, abi, limits, cgroup_support() if (limits.processes or limits.memory) else {}, native)

    def mounts(self) -> tuple[list[str], list[int]]:
        """bwrap arguments (and the descriptors they name, for pass_fds; the caller closes them) that put
        the native launcher into the sandbox: a read-only copy, so nothing inside can change it."""
        if self.native is None:
            return [], []
        from gtd.sandbox.linux.nativelaunch import INSIDE

        # A memfd, not a pipe: a user past pipe-user-pages-soft gets one-page pipes, and writing the
        # binary into one before bwrap reads it would block for ever.
        fd = os.memfd_create("gtd-launch", os.MFD_CLOEXEC)
        try:
            os.write(fd, self.native)
            os.lseek(fd, 0, os.SEEK_SET)
        except BaseException:
            os.close(fd)
            raise
        return ["--perms", "0555", "--ro-bind-data", str(fd), INSIDE], [fd]

    def prefix(self, policy=None, bwrap_args: list[str] | None = None, watch: list[str] = (),
               hold: list[str] = ()) -> list[str]:
        """What bwrap executes in front of the command ([] when there is nothing to apply inside).
        `policy` and `bwrap_args`: what bwrap's mounts were rendered from for this command, and the
        mount arguments themselves (the policy may add writable paths, e.g. package caches); the
        writable set is read per command, as the mounts are. `watch`: the write watch's launcher
        arguments (write_watch.py), passed whenever the launcher runs anyway or is the native one; `hold`: its
        go from gtd (start_hold.py), passed likewise."""
        args = launcher_args(self.limits)
        if self.landlock_abi:
            args += ["--landlock", str(self.landlock_abi)]
            for path in landlock_writable(policy or self.policy, bwrap_args):
                args += ["--write", path]
        if args or self.native is not None:
            args = [*args, *watch, *hold]
        if not args:
            return []
        if self.native is not None:
            from gtd.sandbox.linux.nativelaunch import INSIDE

            return [INSIDE, *args, "--"]
        return [os.path.realpath(sys.executable), "-I", "-S", str(LAUNCHER), *args, "--"]

    def cgroup(self) -> CgroupLimit | None:
        if not self.cgroups:
            return None
        return CgroupLimit(self.limits, self.cgroups)


def landlock_abi(*, fresh: bool = False) -> int:
    """The kernel's Landlock ABI (landlock.abi_version), probed once per boot and context. The probe is a
    raw system call through ctypes, whose import costs ~1.5 ms of every sandbox start (issue 13), and its
    answer changes only with the kernel (a reboot: a new boot id) or with where gtd runs (another user or
    mount namespace: a container sharing the kernel; a seccomp filter gtd was started under): all of them
    key the remembered answer. Kept in gtd's state dir, which no sandbox can write; a missing or unreadable
    entry is probed again. Only an ABI is remembered, never "none": the one answer that would leave the
    layer off (a probe that failed under another seccomp filter with the same counts, a hand edit) is
    always probed again (fails closed; a kernel without Landlock pays the ctypes import). `fresh` (gtd
    doctor) probes whatever is remembered and remembers the answer, forgetting an ABI this context no longer
    gives: the way out the launcher's failure message names."""
    context = _probe_context()
    path = None
    if context is not None:
        from gtd.paths import user_state_dir

        path = user_state_dir() / "cache" / "landlock-abi"
        remembered_abi = None if fresh else _remembered(path, context)
        if remembered_abi is not None:
            return remembered_abi
    from gtd.sandbox.linux.landlock import abi_version

    abi = abi_version()
    if path is not None and abi:
        tmp = path.with_name(f".landlock-abi.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(f"{context}\n{abi}")
            os.replace(tmp, path)
        except OSError:
            pass  # not remembered: the next start probes again
    elif path is not None and fresh:
        try:
            path.unlink()  # no Landlock here now: a remembered ABI would make every launcher fail
        except OSError:
            pass
    return abi


def _remembered(path: Path, context: str) -> int | None:
    """The ABI remembered for this context; None when there is none (another context's, damaged, unreadable)."""
    try:
        remembered, _, abi = path.read_text().rpartition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return int(abi) if remembered == context and abi.isdigit() and int(abi) > 0 else None


def _probe_context() -> str | None:
    """What the Landlock probe's answer depends on besides the kernel build: this boot, the user and mount
    namespaces, and the seccomp state gtd runs under. None when any of it cannot be read (always probe)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespaces = " ".join(f"{os.stat(f'/proc/self/ns/{ns}').st_ino}" for ns in ("user", "mnt"))
        seccomp = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("Seccomp")]
    except OSError:
        return None
    return " ".join([boot, namespaces, *seccomp]) if boot and seccomp else None


def status() -> dict:
    """For `gtd doctor` and `gtd sandbox explain`: which kernel layers this machine gives, probed now (and
    remembered for the sandbox's start in place of what was: landlock_abi)."""
    abi = landlock_abi(fresh=True)
    found = cgroup_support()
    return {
        "landlock": f"active (ABI {abi}): writes only beneath the writable paths, FIFOs and devices included" if abi
        else "not available in this kernel: read-only mounts still stop writes to files, not to FIFOs or devices",
        "landlockAbi": abi,
        "cgroups": {c: f"cgroup {v} at {p}" for c, (v, p) in found.items()},
    }
