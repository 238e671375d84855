"""The kernel layers gtd adds under bubblewrap's mounts and seccomp: Landlock (writes only beneath
the policy's writable paths) and resource limits (cgroup and rlimits). Decided once per session;
each sandboxed command then gets the launcher prefix (sandbox/launch.py) and its own cgroup.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gtd.sandbox.limits import CgroupLimit, ResourceLimits, cgroup_support, launcher_args

LAUNCHER = Path(__file__).with_name("launch.py")
# Private to each sandbox (bwrap's own tmpfs, device dir and procfs): always writable. /proc's magic
# links (/proc/self/fd/N) are checked against the file they lead to, not against /proc.
PRIVATE_WRITABLE = ("/tmp", "/dev", "/proc")


def landlock_writable(policy) -> list[str]:
    """Exactly the writable paths bubblewrap binds read-write (sandbox/bwrap.py): the existing
    writable paths outside every protected and hidden path, resolved."""
    from gtd.sandbox.bwrap import _inside

    keep = [
        w for w in policy.writable
        if os.path.lexists(w)
        and not any(_inside(w, p) for p in policy.protected)
        and not any(_inside(w, d) for d in policy.deny_read)
    ]
    return list(dict.fromkeys(os.path.realpath(w) for w in keep)) + list(PRIVATE_WRITABLE)


@dataclass
class KernelLayers:
    policy: object
    landlock_abi: int
    limits: ResourceLimits
    cgroups: dict = field(default_factory=dict)  # controller -> (version, parent dir)

    @classmethod
    def for_policy(cls, policy) -> "KernelLayers":
        from gtd.sandbox.landlock import abi_version

        limits = policy.limits
        return cls(policy, abi_version(), limits, cgroup_support() if (limits.processes or limits.memory) else {})

    def prefix(self, policy=None) -> list[str]:
        """What bwrap executes in front of the command ([] when there is nothing to apply inside).
        `policy`: the one bwrap's mounts were rendered from for this command (it may add writable
        paths, e.g. package caches); the writable set is read per command, as the mounts are."""
        args = launcher_args(self.limits)
        if self.landlock_abi:
            args += ["--landlock", str(self.landlock_abi)]
            for path in landlock_writable(policy or self.policy):
                args += ["--write", path]
        if not args:
            return []
        return [os.path.realpath(sys.executable), "-I", "-S", str(LAUNCHER), *args, "--"]

    def cgroup(self) -> CgroupLimit | None:
        if not self.cgroups:
            return None
        return CgroupLimit(self.limits, self.cgroups)


def status() -> dict:
    """For `gtd doctor` and `gtd sandbox explain`: which kernel layers this machine gives."""
    from gtd.sandbox.landlock import abi_version

    abi = abi_version()
    found = cgroup_support()
    return {
        "landlock": f"active (ABI {abi}): writes only beneath the writable paths, FIFOs and devices included" if abi
        else "not available in this kernel: read-only mounts still stop writes to files, not to FIFOs or devices",
        "landlockAbi": abi,
        "cgroups": {c: f"cgroup {v} at {p}" for c, (v, p) in found.items()},
    }
