"""Resource limits for one sandboxed command: how many processes it may run and how much memory it may use.

Why: without them a fork bomb or a runaway allocation inside the sandbox takes the whole machine
down with it. The defaults (`ResourceLimits.DEFAULT_*`) are far above what a real build uses.

How, per resource, the first that works here:
1. a cgroup gtd may write (cgroup v2 delegated to the user, or a writable cgroup v1 hierarchy when
   gtd runs as root): the command's whole process tree shares one `pids.max` / memory limit, and the
   kernel's OOM killer stops the tree's largest process, not some other process on the host;
2. rlimits set inside the sandbox by the launcher (sandbox/linux/launch.py): RLIMIT_NPROC, counted per user
   namespace so only the sandbox's tasks count (host root is exempt from it), and RLIMIT_DATA per
   process (not RLIMIT_AS, which breaks runtimes that reserve address space up front).
Nothing is assumed: cgroup support is detected from /proc/self/cgroup and /proc/self/mountinfo.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

from gtd.config.memory_size import human
from gtd.sandbox.policy.resource_limits import ResourceLimits

_counter = itertools.count()


def enforced_by(limits) -> dict:
    """How this machine enforces each configured limit of a ResourceLimits (`gtd sandbox explain`)."""
    import sys

    linux = sys.platform.startswith("linux")
    found = cgroup_support() if linux else {}
    nproc = ("NOT ENFORCED: RLIMIT_NPROC does not bind root and no pids cgroup is writable" if os.geteuid() == 0
             else "RLIMIT_NPROC (this sandbox's processes)")
    return {
        "processes": (_mechanism("pids", found, nproc) if linux else "not enforced on this platform") if limits.processes else None,
        "memory": (_mechanism("memory", found, "RLIMIT_DATA (per process)") if linux else "not enforced on this platform") if limits.memory else None,
    }


def _mechanism(controller: str, found: dict, fallback: str) -> str:
    where = found.get(controller)
    return f"cgroup {where[0]} ({where[1]})" if where else fallback


# -- cgroups -----------------------------------------------------------------------------------

def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
            found.append((fields[4].replace("\\040", " "), rest[0], set(rest[2].split(","))))
    return found


def _own_cgroups() -> dict[str, str]:
    """hierarchy key ('' for v2, else the v1 controller list) -> this process's path in it."""
    own = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                own[c] = path
    except (OSError, ValueError):
        pass
    return own


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def cgroup_support() -> dict[str, tuple[str, Path]]:
    """controller ('pids' / 'memory') -> ('v2' | 'v1', the directory gtd creates its cgroups in)."""
    own, found = _own_cgroups(), {}
    for mount, fstype, options in _mounts():
        if fstype == "cgroup2" and "" in own:
            here = Path(mount + own[""]).resolve()
            # Delegated: our cgroup (or its parent, as systemd does for a user's apps) enables the
            # controllers for its children and we may create children there.
            for parent in (here, here.parent):
                enabled = _read(parent / "cgroup.subtree_control").split()
                if str(parent).startswith(mount) and os.access(parent, os.W_OK):
                    for c in ("pids", "memory"):
                        if c in enabled and c not in found:
                            found[c] = ("v2", parent)
        elif fstype == "cgroup":
            for c in ("pids", "memory"):
                if c in options and c in own and c not in found:
                    here = Path(mount + own[c])
                    if here.is_dir() and os.access(here, os.W_OK):
                        found[c] = ("v1", here)
    return found


def prime_moves() -> None:
    """Make the next move of a process into a cgroup fast. A move first waits for an RCU grace period
    (~10 ms: the kernel switches the lock all forks take to its slow mode), and a move within about a
    grace period of the last one does not. This moves gtd into the cgroup it already is in (nothing
    changes), so that a sandbox started in the next ~20 ms is moved into its own cgroup in microseconds.
    Best effort: where this process may not write its own cgroup, the sandbox's move waits as before.
    Only a cgroup that already lists gtd is written: a mount whose root is not the hierarchy's (a bind-mounted
    subtree) makes mount point + own path name some other cgroup, and gtd must never move itself there."""
    own = _own_cgroups()
    pid = str(os.getpid())
    for mount, fstype, options in _mounts():
        key = "" if fstype == "cgroup2" else next((c for c in ("pids", "memory") if c in options), None)
        if key in own:
            procs = Path(mount + own[key], "cgroup.procs")
            try:
                if pid in procs.read_text().split():
                    procs.write_text(pid)
                    return
            except OSError:
                continue


_ready: CgroupLimit | None = None  # make_ready's, until the session takes it


def make_ready(limits: ResourceLimits) -> None:
    """Make the first command's cgroup and start the priming move (prime_moves) now: `gtd sandbox run` calls
    this as soon as the config is read, before it builds the policy, so the move's grace period (~10-15 ms)
    passes while the policy is built and the session starts instead of while the command waits for its own
    move (~4 ms of every start, once session start had become shorter than a grace period). The cgroup is
    made first: a mkdir in a cgroup hierarchy waits for a move in flight. The session takes it (take_ready);
    gtd drops it (drop_ready) if none did. Best effort, like the priming: a failure leaves it to the session."""
    global _ready
    drop_ready()
    support = cgroup_support() if (limits.processes or limits.memory) else {}
    if not support:
        return
    _ready = CgroupLimit(limits, support)
    from gtd.background import Background

    Background(prime_moves)


def take_ready(limits: ResourceLimits, support: dict[str, tuple[str, Path]]) -> CgroupLimit | None:
    """make_ready's cgroup if it is the one the session would make now (the same limits in the same places),
    else None (a cgroup made for other limits is removed)."""
    if _ready is not None and (_ready.limits, _ready.support) == (limits, support):
        return _take()
    drop_ready()
    return None


def drop_ready() -> None:
    """Remove make_ready's cgroup if no session took it (the sandbox was off, or gtd stopped first)."""
    ready = _take()
    if ready is not None:
        ready.remove()


def _take() -> CgroupLimit | None:
    global _ready
    ready, _ready = _ready, None
    return ready


def _sweep_stale(parent: Path) -> None:
    """Remove empty cgroups left by a gtd that was killed (named gtd-<pid>-<n>, that pid gone)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        m = re.fullmatch(r"gtd-(\d+)-\d+", name)
        if m and int(m.group(1)) != os.getpid() and not os.path.exists(f"/proc/{m.group(1)}"):
            try:
                os.rmdir(parent / name)
            except OSError:
                pass


class CgroupLimit:
    """The cgroup(s) one sandboxed command runs in, created before it starts, removed after it ends."""

    def __init__(self, limits: ResourceLimits, support: dict[str, tuple[str, Path]]):
        self.limits = limits
        self.support = support
        self.dirs: list[Path] = []
        self.covered: set[str] = set()
        self._counters: dict[str, Path] = {}  # controller -> the file whose counter says the limit was hit
        name = f"gtd-{os.getpid()}-{next(_counter)}"
        wanted = {"pids": limits.processes, "memory": limits.memory}
        by_dir: dict[Path, list[tuple[str, str, int]]] = {}
        for controller, value in wanted.items():
            if value and controller in support:
                version, parent = support[controller]
                by_dir.setdefault(parent / name, []).append((controller, version, value))
        for path, settings in by_dir.items():
            _sweep_stale(path.parent)
            try:
                path.mkdir()
            except OSError:
                continue
            self.dirs.append(path)
            for controller, version, value in settings:
                files = {"pids": ["pids.max"], "memory": ["memory.max"] if version == "v2" else ["memory.limit_in_bytes"]}[controller]
                try:
                    for f in files:
                        (path / f).write_text(str(value))
                    self.covered.add(controller)
                    self._counters[controller] = path / ("pids.events" if controller == "pids" else
                                                         "memory.events" if version == "v2" else "memory.oom_control")
                except OSError:
                    pass

    def attach(self, *pids: int) -> None:
        """Move the sandbox's processes in (before the command runs: everything it starts follows)."""
        for path in self.dirs:
            for pid in pids:
                try:
                    (path / "cgroup.procs").write_text(str(pid))
                except OSError:
                    pass

    def kill(self, wait: float = 5.0) -> None:
        """SIGKILL everything still in the cgroup (the Landlock backend: no PID namespace takes it away),
        then wait up to `wait` seconds until it is empty (nothing inside writes while the tree is checked)."""
        import signal
        import time

        for path in self.dirs:
            try:
                (path / "cgroup.kill").write_text("1")  # cgroup v2, Linux 5.14+
                continue
            except OSError:
                pass
            try:
                pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                continue
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        deadline = time.monotonic() + wait
        for path in self.dirs:
            while _read(path / "cgroup.procs").strip() and time.monotonic() < deadline:
                time.sleep(0.01)

    def hits(self) -> list[tuple[str, str]]:
        """(setting, what happened) for each limit the command ran into, read before remove()."""
        found = []
        for controller, counter in self._counters.items():
            key = "max" if controller == "pids" else "oom_kill"
            count = _counter_value(counter, key)
            if not count:
                continue
            if controller == "pids":
                found.append(("sandbox.limits.processes", f"{count} process start(s) refused at the limit of {self.limits.processes}"))
            else:
                found.append(("sandbox.limits.memory", f"{count} process(es) killed at the memory limit of {human(self.limits.memory)}"))
        return found

    def remove(self) -> None:
        for path in self.dirs:
            try:
                path.rmdir()
            except OSError:
                pass  # still has a zombie being reaped; an empty cgroup costs nothing
        self.dirs.clear()


def _counter_value(path: Path, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def launcher_args(limits: ResourceLimits) -> list[str]:
    """The rlimits the in-sandbox launcher sets. Always, even under a cgroup: they are the floor that
    holds if moving the sandbox into its cgroup fails, and with the same values they never bind first
    on a whole tree (RLIMIT_DATA is per process, a cgroup's memory limit is for all of them)."""
    args = []
    if limits.processes:
        args += ["--nproc", str(limits.processes)]
    if limits.memory:
        args += ["--data", str(limits.memory)]
    return args


class CommandCgroups:
    """A session's cgroups, one per sandboxed command: the first may be made ahead (`spare`), every later one
    when its command starts. At the end each says which limit it hit, and is removed (both Linux backends)."""

    def __init__(self, make):
        import threading

        self._make = make  # KernelLayers.cgroup: a new CgroupLimit, or None where no cgroup is writable
        self._lock = threading.Lock()
        self._spare: CgroupLimit | None = None
        self.all: list[CgroupLimit] = []

    def keep_spare(self, cgroup: "CgroupLimit | None") -> None:
        if cgroup is not None:
            self._spare = cgroup
            self.all.append(cgroup)

    def take(self) -> "CgroupLimit | None":
        """The next command's cgroup: the spare, once, else a new one (made outside the lock: a mkdir in a
        cgroup hierarchy may wait), so two commands starting at once never share one."""
        with self._lock:
            cgroup, self._spare = self._spare, None
        if cgroup is None:
            cgroup = self._make()
            if cgroup is not None:
                with self._lock:
                    self.all.append(cgroup)
        return cgroup

    def close(self, on_hit) -> None:
        """`on_hit(setting, what)` for each limit a command hit; then every cgroup is removed."""
        for cgroup in self.all:
            for setting, what in cgroup.hits():
                on_hit(setting, what)
            cgroup.remove()
        self.all.clear()
        self._spare = None
