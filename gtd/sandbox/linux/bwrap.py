"""Render a SandboxPolicy as bubblewrap arguments (the Linux backend's filesystem half).

Mount order is the policy: the whole root read-only, a private /tmp, writable roots bound
read-write, then every *ancestor* of a protected or hidden path inside a writable root bound onto
itself (a mount point cannot be renamed or removed: EBUSY, so neither `mv .git .git2 && mkdir .git`
nor `mv secrets s2 && cat s2/key` works), then protected paths read-only on top (deny beats allow;
also stops hard links: EXDEV across mounts), then denied reads hidden (an empty tmpfs or
/dev/null), and last a chosen cloud provider's credential files bound read-only into them. A
writable path configured *below* a hidden directory is bound again on top of it.

Writable roots are checked after resolving them: a writable path inside the workspace that is or
becomes a symlink is refused (SandboxUnavailable naming it). The inode each one resolved to is
recorded, and `MountPlan.verify` compares it with what is mounted there once bwrap has built the
namespace and before the command runs: swapping a path component between the check and the mount
cannot redirect a bind. (`--bind-fd` would be simpler, but the kernel refuses a bind from another
mount namespace, and bwrap may be started inside the package-cache holder's namespace.)

A missing protected path inside the workspace gets no mount at all, so the sandbox sees the same
work tree as the host (no phantom files for git, rg, find or cp): it is *watched* instead, and if
it exists after the run it is quarantined (see placeholders.py). Outside the workspace (a writable
part of HOME), and for gtd's own config and state dirs, which gtd reads while the agent runs, its
first missing component gets a read-only empty placeholder file (a regular file: /dev/null would
read as EACCES, binds are nodev), which bwrap creates on the host as a mount point and gtd removes
when the last session ends, or at the next start after a crash. The session first creates missing
parent directories outside the workspace (`placeholder_parents`, made by hostcreate), so that first
missing component is the protected path itself: a placeholder on ~/.config would stop every tool
that creates ~/.config/<its own dir>.

HOME (unless it is the work), other users' homes and services' state are an empty tmpfs, read-only
once every mount in it exists, with the policy's allow-list bound read-only into it (home_allow.py).

Each git dir in a writable root is one protected path, mounted read-only as a whole (see
protected.py): nothing under it, existing or not, can be created or changed below level full. A git
dir the private /tmp would hide (the common dir of a linked worktree whose repository is under
/tmp) is bound in read-only, resolved on the host, so git still works in the worktree.

A writable file in an otherwise read-only workspace root (TODO.md at readonly) gets a *sealed*
root: a mode-0555 tmpfs mirroring the root's entries read-only. Creating a sibling there fails
with EACCES rather than EROFS, and that is the error on which atomic writers (Claude Code's
Write/Edit: temp file, then rename) fall back to writing the file in place. Anything the agent
manages to put in the sealed root itself lives in that tmpfs and vanishes with the sandbox.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd import paths
from gtd.record import field, record
from gtd.sandbox.host.placeholders import empty_file
from gtd.sandbox.linux.writable_roots import _checked_inode, _first_problem, _gets_placeholder, _git_dirs_under_tmp, _gtd_own, _has_ancestor_in, _mirrored_entries, _outermost_protected, _root_of, _sealed_root, unsafe_writable, writable_roots
from gtd.sandbox.policy.containment import inside, strictly_inside
from gtd.sandbox.policy.home_allow import hidden_roots as _hidden_roots
from gtd.sandbox.policy.home_allow import under_hidden as _under_hidden
from gtd.sandbox.policy.home_allow import visible_roots as _visible_roots
from gtd.sandbox.policy.sandbox_policy import SandboxPolicy

# The oldest bubblewrap these arguments run on: `--perms` (the sealed root, the git shim, the launcher)
# came in 0.5.0. Debian 11 and Ubuntu 20.04 ship 0.4, which stops at the first `--perms` with
# "Unknown option", after a minimal probe run has worked.
MIN_VERSION = (0, 5, 0)


def version_said(bwrap: str) -> str:
    """What `bwrap --version` prints ("bubblewrap 0.8.0"), or "" when it cannot be run."""
    import subprocess

    try:
        return subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def too_old(bwrap: str, said: str | None = None) -> str | None:
    """Why `bwrap` cannot run gtd's sandbox, when its version (`said`: version_said's, asked here if not
    given) is older than MIN_VERSION; None when it is new enough or its version cannot be read (the sandbox
    start then reports what bwrap says)."""
    import re

    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", version_said(bwrap) if said is None else said)
    if not found:
        return None
    version = tuple(int(part or 0) for part in found.groups())
    if version >= MIN_VERSION:
        return None
    need = ".".join(map(str, MIN_VERSION))
    return (f"{bwrap} is bubblewrap {'.'.join(map(str, version))}; gtd needs {need} or later (`--perms`): "
            f"install a newer bubblewrap (your distribution's backports, or build it from "
            f"https://github.com/containers/bubblewrap)")


BASE_ARGS = (
    "--new-session",  # setsid: no controlling terminal, so no TIOCSTI into the user's shell
    "--die-with-parent",
    "--unshare-user",
    "--unshare-pid",  # everything started inside dies with the command
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    # bwrap covers /proc/sys only if access(W_OK) on the directory succeeds, which it never does, yet
    # when gtd runs as root, uid 0 inside is global root to sysctl permission checks: without this,
    # kernel.core_pattern="|cmd" is writable and runs cmd as host root. Each reader still sees its own
    # namespaces' values (net, uts) through the bound files.
    "--ro-bind", "/proc/sys", "/proc/sys",
    "--cap-drop", "ALL",  # bwrap keeps every capability inside when run as root
    "--tmpfs", "/tmp",
)


@record
class MountPlan:
    args: list[str] = field(default_factory=list)
    placeholders: list[Path] = field(default_factory=list)  # created on the host by bwrap as mount points
    watched: list[tuple[Path, Path]] = field(default_factory=list)  # (missing protected path, first missing part)
    fds: list[int] = field(default_factory=list)  # for bwrap's --ro-bind-data: pass, then close()
    binds: list[tuple[Path, int, int]] = field(default_factory=list)  # writable root, st_dev, st_ino checked
    bound_dirs: list[Path] = field(default_factory=list)  # the writable roots that are directories (resolved)

    def writes_reach(self, workspace: Path) -> bool:
        """Whether the command can create entries anywhere in `workspace`'s tree: a writable directory
        bound inside it, or around it. A writable regular file cannot gain entries (a mount point cannot
        be replaced), and everything else is mounted read-only: then no `.git` can be planted there."""
        return any(inside(d, workspace) or inside(workspace, d) for d in self.bound_dirs)

    def verify(self, child_pid: int, skip=()) -> str | None:
        """None if every writable bind in the sandbox of `child_pid` (blocked before exec) is the
        inode that was checked; else what moved. A sandbox gtd may not inspect is not refused.
        `skip`: binds of gtd's own making whose inode differs on purpose (package-cache overlays)."""
        skipped = {Path(os.path.realpath(p)) for p in skip}
        if not [b for b in self.binds if b[0] not in skipped]:
            return None
        try:
            if not _wait_until_blocked(child_pid):
                return "bubblewrap did not finish setting up the sandbox in time; its writable paths were not checked"
        except PermissionError:
            return None
        except OSError:
            return None  # gone already: bwrap failed, and the caller reports that
        for path, dev, ino in self.binds:
            if path in skipped:
                continue
            try:
                st = os.stat(f"/proc/{child_pid}/root{path}")
            except PermissionError:
                return None
            except OSError as exc:
                if not _alive(child_pid):
                    return None  # the child died after blocking: nothing runs, and the caller reports bwrap's failure
                return f"the writable path {path} could not be checked inside the sandbox ({exc.strerror})"
            if (st.st_dev, st.st_ino) != (dev, ino):
                return (f"the writable path {path} changed between its check and the mount (a symlink swapped in?): "
                        f"refusing to start the sandbox")
        return None

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds.clear()


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie's /proc/PID/root is gone too, so it counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _wait_until_blocked(pid: int, timeout: float = 20.0) -> bool:
    """Wait until bwrap's child sleeps in its read of --block-fd, which it reaches only once every
    mount is in place (and before seccomp and exec). False on timeout."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/wchan") as f:
            if "pipe_read" in f.read():
                return True
        time.sleep(0.001)
    return False


def data_fd(data: bytes) -> int:
    """A readable descriptor holding `data` (bwrap copies it into the sandbox; a pipe: `data` < 64 KiB)."""
    r, w = os.pipe()
    try:
        os.write(w, data)
    finally:
        os.close(w)
    return r


def render_mounts(policy: SandboxPolicy, after: list[str] | tuple[str, ...] = ()) -> MountPlan:
    """The filesystem arguments for bwrap. Reads the filesystem (existence, symlinks); creates nothing.
    Pass `plan.fds` to bwrap and close the plan after spawning it; `plan.verify` before the command runs.
    `after`: the session's own mounts (the launcher's), placed before the hidden roots are made read-only,
    so bwrap can still create their mount points there; gtd's generated files come from the policy."""
    plan = MountPlan(args=list(BASE_ARGS))
    try:
        _render(policy, plan, list(after))
    except BaseException:
        plan.close()
        raise
    return plan


def _render(policy: SandboxPolicy, plan: MountPlan, after: list[str]) -> None:
    from gtd.sandbox.policy.gitshim import SCRIPT, SHIM_DIR

    roots = writable_roots(policy)
    writable = [r.real for r in roots]

    ops: list[tuple[int, int, list[str]]] = []  # (depth, order, args): parents first, then by kind
    tail: list[str] = []  # paths remounted read-only after every mount (remounting a hidden tmpfs read-only once binds below it exist)

    def add(path: Path, order: int, *args: str) -> None:
        ops.append((len(path.parts), order, list(args)))

    sealed = _sealed_root(policy.workspace, writable)
    if sealed is not None:
        add(sealed, 0, "--perms", "0555", "--tmpfs", str(sealed))
        for entry in _mirrored_entries(sealed, writable):
            if os.path.islink(entry):
                add(entry, 0, "--symlink", os.readlink(entry), str(entry))
            else:
                add(entry, 0, "--ro-bind", str(entry), str(entry))
    # HOME (unless it is the work) and other users' homes and services' state: an empty tmpfs, read-only
    # once the mounts in it exist; then what the command must still see there (and under the private /tmp).
    hidden = _hidden_roots(policy)
    for area in hidden[1:]:
        add(area, 0, "--tmpfs", str(area))
        tail.append(str(area))
    visible = _visible_roots(policy)
    for source, target in visible:
        if _under_hidden(target, hidden) and os.path.exists(source) and target != sealed and source not in writable:
            add(target, 0, "--ro-bind", str(source), str(target))
    for source, target in _git_dirs_under_tmp(policy):
        add(target, 0, "--ro-bind", str(source), str(target))
    for root in roots:
        inode = _checked_inode(root.real)
        if inode is None:
            if inside(root.spelled, policy.workspace):
                raise unsafe_writable(root.spelled, root.spelled)
            continue
        dev, ino, is_dir = inode
        plan.binds.append((root.real, dev, ino))
        if is_dir:
            plan.bound_dirs.append(root.real)
        add(root.real, 1, "--bind", str(root.real), str(root.real))
        if root.spelled != root.real and _under_hidden(root.spelled, hidden) and not any(
                inside(root.spelled, t) for _, t in visible):
            # The person's own link to it (`~/ext -> /data/ext`) in a hidden HOME: the same link inside.
            add(root.spelled, 1, "--symlink", str(root.real), str(root.spelled))

    seen_ancestors: set[Path] = set()

    def bind_ancestors(p: Path, root: Path) -> None:
        """Ancestors of p strictly inside root, each bound onto itself: they cannot be renamed."""
        for anc in list(p.parents):
            if not strictly_inside(anc, root) or anc in seen_ancestors or _has_ancestor_in(str(anc), protected_set, self_too=True):
                continue
            if os.path.isdir(anc) and not os.path.islink(anc):
                seen_ancestors.add(anc)
                add(anc, 2, "--bind", str(anc), str(anc))

    by_string = {str(w): w for w in writable}

    def root_of(p: Path) -> Path | None:
        return _root_of(p, by_string)

    targets: list[Path] = []
    sealed_roots: list[Path] = []
    placeholders: list[Path] = []
    gtd_own = _gtd_own()
    protected_set = {str(p) for p in policy.protected}
    for p in _outermost_protected(policy):
        root = root_of(p)
        if root is None:
            continue  # outside every writable root: already read-only
        state, where = _first_problem(p, root)
        if state == "symlink":
            # A symlink cannot carry a mount; protect the directory holding it and its target.
            target = Path(os.path.realpath(where / p.relative_to(where).parts[0]))
            if any(strictly_inside(target, w) for w in writable):
                targets.append(target)
            p = where
            if p == root:
                add(p, 3, "--ro-bind", str(p), str(p))
                sealed_roots.append(p)
                continue
            state = "ok"
        bind_ancestors(p, root)
        if state == "ok":
            add(p, 3, "--ro-bind", str(p), str(p))
        elif where == policy.workspace / paths.PROJECT_CONFIG_NAME:
            pass  # gtd itself creates it when the person saves an approval mid-run; untrusted until pinned
        elif not _gets_placeholder(where, policy, gtd_own):
            plan.watched.append((p, where))
        else:
            placeholders.append(where)
    # A root made read-only as a whole (a symlink at one of its protected names) needs no placeholder in it,
    # and bwrap could not create one there: the start failed on the first ("Can't create file").
    for where in placeholders:
        if not any(inside(where, r) for r in sealed_roots):
            add(where, 3, "--ro-bind", str(empty_file()), str(where))
            plan.placeholders.append(where)
    for target in targets:
        if os.path.lexists(target):
            add(target, 3, "--ro-bind", str(target), str(target))

    shown = [t for _, t in visible] + [Path(s) for s in by_string]  # what a hidden root does not cover
    for d in policy.deny_read:
        if not os.path.lexists(d):
            continue  # nothing to read; HOME and the workspace are not writable where it could appear
        real = Path(os.path.realpath(d))
        for spot in dict.fromkeys((real, Path(os.path.normpath(d)))):
            if spot != real and not any(inside(spot, t) for _, t in visible):
                continue  # the spelled path matters only where an allow-list entry shows it through a link
            if _under_hidden(spot, hidden) and not any(inside(spot, t) for t in shown):
                continue  # under hidden HOME, another hidden root or /tmp, and nothing shows it: hidden already
            root = root_of(spot)
            if root is not None:
                bind_ancestors(spot, root)
            if real.is_dir():
                add(spot, 4, "--tmpfs", str(spot))
                tail.append(str(spot))
            elif real.exists():
                add(spot, 4, "--ro-bind", "/dev/null", str(spot))
    # The files gtd generates (the git and cargo config without credentials) where the tools look, in the hidden HOME.
    for target, text, _ in policy.generated_files if policy.home_hidden else ():
        fd = data_fd(text.encode("utf-8", "surrogateescape"))
        plan.fds.append(fd)
        add(target, 5, "--ro-bind-data", str(fd), str(target))
    # A chosen cloud provider's credential files, resolved on the host (credential_files.py): read-only,
    # on top of the hidden dir that holds them.
    for cred in policy.credential_files:
        add(cred.target, 5, "--ro-bind", str(cred.source), str(cred.target))

    # Deduplicate while keeping the first op per (path, kind).
    seen: set[tuple[str, ...]] = set()
    for _, _, args in sorted(ops, key=lambda o: (o[0], o[1])):
        key = tuple(args)
        if key not in seen:
            seen.add(key)
            plan.args += args
    plan.args += after
    for path in dict.fromkeys(tail):
        plan.args += ["--remount-ro", path]
    shim = data_fd(SCRIPT.encode())
    plan.fds.append(shim)
    plan.args += ["--perms", "0555", "--ro-bind-data", str(shim), f"{SHIM_DIR}/git"]
    plan.placeholders = list(dict.fromkeys(plan.placeholders))
    plan.watched = list(dict.fromkeys(plan.watched))
