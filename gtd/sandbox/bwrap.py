"""Render a SandboxPolicy as bubblewrap arguments (the Linux backend's filesystem half).

Mount order is the policy: the whole root read-only, a private /tmp, writable roots bound
read-write, then every *ancestor* of a protected path inside a writable root bound onto itself
(a mount point cannot be renamed or removed: EBUSY, so `mv .git .git2 && mkdir .git` is refused),
then protected paths read-only on top (deny beats allow; also stops hard links: EXDEV across
mounts), a read-only /dev/null placeholder on the first missing component of a protected path
(it cannot be created), and finally denied reads hidden (empty read-only tmpfs or /dev/null).

A writable file in an otherwise read-only workspace root (TODO.md at readonly) gets a *sealed*
root: a mode-0555 tmpfs mirroring the root's entries read-only. Creating a sibling there fails
with EACCES rather than EROFS, and that is the error on which atomic writers (Claude Code's
Write/Edit: temp file, then rename) fall back to writing the file in place. Anything the agent
manages to put in the sealed root itself lives in that tmpfs and vanishes with the sandbox.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gtd.sandbox.policy import SandboxPolicy

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


@dataclass
class MountPlan:
    args: list[str] = field(default_factory=list)
    placeholders: list[Path] = field(default_factory=list)  # created on the host by bwrap as mount points


def _inside(path: Path, root: Path) -> bool:
    """path is root or below it (string test: pathlib's `.parents` is far too slow here)."""
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


def _strictly_inside(path: Path, root: Path) -> bool:
    p, r = str(path), str(root)
    return p != r and p.startswith(r if r.endswith("/") else r + "/")


def _has_ancestor_in(path: str, candidates: set[str], self_too: bool = False) -> bool:
    if self_too and path in candidates:
        return True
    parent = os.path.dirname(path)
    while parent != path:
        if parent in candidates:
            return True
        path, parent = parent, os.path.dirname(parent)
    return False


def _first_problem(path: Path, root: Path) -> tuple[str, Path]:
    """Walk from root to path: ("ok", path) | ("missing", first missing) | ("symlink", its parent)."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if os.path.islink(current):
            return "symlink", current.parent
        if not os.path.lexists(current):
            return "missing", current
    return "ok", path


def _sealed_root(workspace: Path, writable: list[Path]) -> Path | None:
    """The workspace, when it is read-only yet holds a writable file directly (the phase's file)."""
    if any(_inside(workspace, w) for w in writable):
        return None  # the workspace (or a parent) is writable anyway
    if any(w.parent == workspace and not w.is_dir() for w in writable):
        return workspace
    return None


def _mirrored_entries(root: Path, writable: list[Path]) -> list[Path]:
    """The entries of a sealed root, except the writable ones (bound read-write on their own)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    keep = set(writable)
    return [root / name for name in sorted(names) if root / name not in keep]


def render_mounts(policy: SandboxPolicy) -> MountPlan:
    """The filesystem arguments for bwrap. Reads the filesystem (existence, symlinks); changes nothing."""
    plan = MountPlan(args=list(BASE_ARGS))
    tmp = Path("/tmp")
    protected = list(policy.protected)
    # A writable path inside a protected or denied one stays protected/denied.
    writable = [
        w
        for w in policy.writable
        if os.path.lexists(w)
        and not any(_inside(w, p) for p in protected)
        and not any(_inside(w, d) for d in policy.deny_read)
    ]
    writable = [Path(os.path.realpath(w)) for w in writable]

    ops: list[tuple[int, int, list[str]]] = []  # (depth, order, args): parents first, then by kind

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
    # Roots the command must still see although they live under the private /tmp.
    for root in (policy.home, policy.workspace, *policy.runtime_roots):
        if _strictly_inside(root, tmp) and root.exists() and root != sealed:
            add(root, 0, "--ro-bind", str(root), str(root))
    for w in writable:
        add(w, 1, "--bind", str(w), str(w))

    seen_ancestors: set[Path] = set()
    targets: list[Path] = []
    # A protected path inside another protected path is covered by the outer mount.
    protected_set = {str(p) for p in protected}
    protected = [p for p in protected if not _has_ancestor_in(str(p), protected_set)]
    for p in protected:
        roots = [w for w in writable if _strictly_inside(p, w)]
        if not roots:
            continue  # outside every writable root: already read-only
        root = max(roots, key=lambda w: len(w.parts))
        state, where = _first_problem(p, root)
        if state == "symlink":
            # A symlink cannot carry a mount; protect the directory holding it and its target.
            target = Path(os.path.realpath(where / p.relative_to(where).parts[0]))
            if any(_strictly_inside(target, w) for w in writable):
                targets.append(target)
            p = where
            if p == root:
                add(p, 3, "--ro-bind", str(p), str(p))
                continue
            state = "ok"
        for anc in list(p.parents):
            if not _strictly_inside(anc, root) or anc in seen_ancestors or _has_ancestor_in(str(anc), protected_set, self_too=True):
                continue
            if os.path.isdir(anc) and not os.path.islink(anc):
                seen_ancestors.add(anc)
                add(anc, 2, "--bind", str(anc), str(anc))
        if state == "ok":
            add(p, 3, "--ro-bind", str(p), str(p))
        else:
            add(where, 3, "--ro-bind", "/dev/null", str(where))
            plan.placeholders.append(where)
    for target in targets:
        if os.path.lexists(target):
            add(target, 3, "--ro-bind", str(target), str(target))

    for d in policy.deny_read:
        if not os.path.lexists(d):
            continue  # nothing to read; HOME and the workspace are not writable where it could appear
        real = Path(os.path.realpath(d))
        if real.is_dir():
            add(real, 4, "--tmpfs", str(real), "--remount-ro", str(real))
        elif real.exists():
            add(real, 4, "--ro-bind", "/dev/null", str(real))

    # Deduplicate while keeping the first op per (path, kind).
    seen: set[tuple[str, ...]] = set()
    for _, _, args in sorted(ops, key=lambda o: (o[0], o[1])):
        key = tuple(args)
        if key not in seen:
            seen.add(key)
            plan.args += args
    plan.placeholders = list(dict.fromkeys(plan.placeholders))
    return plan
