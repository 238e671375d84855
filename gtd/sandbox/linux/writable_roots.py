"""The writable roots a policy gives bubblewrap, checked on the host before anything is mounted: each
resolved (a symlink inside the workspace is refused), its inode recorded for MountPlan.verify, and the
protected paths below it found, with where a missing one gets its read-only placeholder (bwrap.py's
docstring has the whole mount order)."""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path

from gtd import paths
from gtd.errors import SandboxUnavailable
from gtd.record import record
from gtd.sandbox.policy.containment import inside, strictly_inside
from gtd.sandbox.policy.home_allow import hidden_roots as _hidden_roots
from gtd.sandbox.policy.home_allow import under_hidden as _under_hidden
from gtd.sandbox.policy.home_allow import visible_roots as _visible_roots
from gtd.sandbox.policy.sandbox_policy import SandboxPolicy


@record(frozen=True)
class WritableRoot:
    spelled: Path
    real: Path


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


def _symlink_in(path: Path, root: Path) -> Path | None:
    """The first component of `path` below `root` (root itself included) that is a symlink."""
    current = root
    if os.path.islink(current):
        return current
    for part in path.relative_to(root).parts:
        current = current / part
        if os.path.islink(current):
            return current
    return None


def unsafe_writable(path: Path, link: Path) -> SandboxUnavailable:
    if not os.path.islink(link):
        return SandboxUnavailable(
            f"refusing to make {path} writable: it is not a regular file or directory (or it changed while gtd "
            f"checked it). Replace it by a regular file or directory (or remove it from sandbox.levels.*.writablePaths)."
        )
    return SandboxUnavailable(
        f"refusing to make {path} writable: {link} is a symlink (-> {os.readlink(link)}) inside the workspace, so "
        f"the sandbox would write wherever it points. Replace the symlink by the real file or directory "
        f"(or remove {path} from sandbox.levels.*.writablePaths)."
    )


def _checked_inode(real: Path) -> tuple[int, int, bool] | None:
    """(st_dev, st_ino, whether it is a directory) of `real` (fully resolved), None if it is not a plain
    directory or file there."""
    fd = _open_checked(real)
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        return st.st_dev, st.st_ino, not stat.S_ISREG(st.st_mode)
    finally:
        os.close(fd)


def _open_checked(real: Path) -> int | None:
    """An O_PATH descriptor on `real` (fully resolved), refused if it moved since it was resolved."""
    try:
        fd = os.open(real, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) or os.readlink(f"/proc/self/fd/{fd}") != str(real):
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    return fd


def writable_roots(policy: SandboxPolicy) -> list[WritableRoot]:
    """The policy's writable paths that exist, resolved and checked.

    Raises SandboxUnavailable for a writable path inside the workspace that resolves elsewhere (a
    symlinked TODO.md, AGENTS.md or configured path). Drops paths that resolve into a protected path
    (deny beats allow) or reach a hidden path through a symlink; keeps a writable path spelled below
    a hidden directory (the more specific rule, shown by `gtd sandbox explain`).
    """
    roots: list[WritableRoot] = []
    protected = {str(p) for p in policy.protected}  # `inside(x, any protected)`: one set lookup per ancestor
    hidden = None  # the hidden paths that exist, resolved: looked up once a writable path needs them (readonly has none)
    for w in policy.writable:
        if not os.path.lexists(w):
            continue  # missing and not created by the session: stays read-only
        if inside(w, policy.workspace):
            link = _symlink_in(w, policy.workspace)
            if link is not None:
                raise unsafe_writable(w, link)
            real = w
        else:
            real = Path(os.path.realpath(w))
        if _has_ancestor_in(str(w), protected, self_too=True) or _has_ancestor_in(str(real), protected, self_too=True):
            continue
        if hidden is None:
            hidden = [(d, Path(os.path.realpath(d))) for d in policy.deny_read if os.path.lexists(d)]
        if any(inside(real, real_d) and not strictly_inside(w, d) for d, real_d in hidden):
            continue
        roots.append(WritableRoot(w, real))
    return list({r.real: r for r in roots}.values())


def _git_dirs_under_tmp(policy: SandboxPolicy) -> list[tuple[Path, Path]]:
    """(resolved source, place git looks) for the git dirs of a linked worktree that the private /tmp
    would hide (its repository lives under /tmp). Read-only like every git dir; resolved and checked
    on the host (protected.linked_worktree_git_dirs), bound where each really is and, when the `.git`
    file or `commondir` spells it through a symlink, also where git looks."""
    from gtd.sandbox.policy.protected import linked_worktree_git_dirs

    hidden = _hidden_roots(policy)
    bound = [t for _, t in _visible_roots(policy)]
    binds: list[tuple[Path, Path]] = []
    for real, spelled in sorted(linked_worktree_git_dirs(policy.workspace), key=lambda d: len(d[0].parts)):
        for target in dict.fromkeys((real, spelled)):
            if _under_hidden(target, hidden) and not any(inside(target, r) for r in bound) and not any(
                    inside(target, t) for _, t in binds):
                binds.append((real, target))
    return binds


def _root_of(p: Path, writable: dict[str, Path]) -> Path | None:
    """The innermost writable root strictly holding p (None: p is read-only anyway). `writable`: the
    roots by their string; p's ancestors are looked up from the nearest up, only when some root's
    string begins p's (most of the ~300 protected paths are under none: ~1.5 ms per session start)."""
    path = str(p)
    if not any(path.startswith(root) for root in writable):
        return None
    parent = os.path.dirname(path)
    while parent != path:
        if parent in writable:
            return writable[parent]
        path, parent = parent, os.path.dirname(parent)
    return None


def _outermost_protected(policy: SandboxPolicy) -> list[Path]:
    """The protected paths not inside another one (the outer mount covers the inner)."""
    return list(_outermost(policy.protected))


@functools.lru_cache(maxsize=8)
def _outermost(protected: tuple[Path, ...]) -> tuple[Path, ...]:
    """A pure function of the paths (strings only): worked out once per session's policy, not per command.
    The paths (normalised, absolute) sorted with `/` as the lowest character put each one's descendants
    right after it: one comparison with the last outer path each, not a walk up every path's ancestors
    (~0.8 ms for the ~300 protected paths)."""
    texts = [str(p) for p in protected]
    inner: set[str] = set()
    outer = None
    for text in sorted(set(texts), key=lambda t: t.replace("/", "\0")):
        if outer is not None and (outer == "/" or text.startswith(outer + "/")):
            inner.add(text)
        else:
            outer = text
    return tuple(p for p, text in zip(protected, texts) if text not in inner)


def _gtd_own() -> tuple[Path, Path]:
    """gtd's own config and state dirs (read by gtd while the agent runs)."""
    return paths.user_config_dir(), paths.user_state_dir()


def _gets_placeholder(where: Path, policy: SandboxPolicy, gtd_own: tuple[Path, Path]) -> bool:
    """A missing protected path's first missing component gets a read-only placeholder file outside
    the workspace and in gtd's own dirs (`gtd_own`: which gtd reads while the agent runs); inside the
    workspace it is watched instead (a mount point there would be a phantom file in the work tree)."""
    return not inside(where, policy.workspace) or any(inside(where, own) for own in gtd_own)


def placeholder_parents(policy: SandboxPolicy) -> list[tuple[Path, Path]]:
    """(protected path, its first missing component) for each missing protected path outside the
    workspace whose *parent* is missing too: a placeholder file on that first component (~/.config
    for ~/.config/git) would block every tool that creates ~/.config/<its own dir>. The session
    creates these parent directories on the host first (hostcreate), so the placeholder lands on
    the protected path itself."""
    try:
        writable = {str(r.real): r.real for r in writable_roots(policy)}
    except SandboxUnavailable:
        return []  # every command will be refused, naming the path
    found: list[tuple[Path, Path]] = []
    gtd_own = _gtd_own()
    for p in _outermost_protected(policy):
        root = _root_of(p, writable)
        if root is None or inside(p, policy.workspace):
            continue
        state, where = _first_problem(p, root)
        if state == "missing" and where != p and _gets_placeholder(where, policy, gtd_own):
            found.append((p, where))
    return found


def _sealed_root(workspace: Path, writable: list[Path]) -> Path | None:
    """The workspace, when it is read-only yet holds a writable file directly (the phase's file)."""
    if any(inside(workspace, w) for w in writable):
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
