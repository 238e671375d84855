"""The policy as Landlock rules, for the Landlock backend (no mounts, so every grant is a path rule).

Landlock grants a right on a whole hierarchy and can take nothing back below it. So what bubblewrap
expresses as "this tree, except that" is built top-down here: a directory holding nothing to except
is granted as a whole; one that does is not granted itself, and each of its entries is looked at in
turn (`_split`). Reads: / except the hidden areas (HOME unless it is the work, other users' homes,
services' state, /tmp, /dev, the denied reads), then each visible root (the workspace, gtd's runtime,
HOME's allow-list) granted on its own, never its parent. Writes: each writable root, except the
protected paths and denied reads in it: the workspace is then writable entry by entry, and a
directory that holds a protected path (the workspace itself, for `.git`) takes no new entries.

A missing protected path whose first missing component would land in a writable hierarchy cannot be
refused: it is watched, and quarantined at the session's end if it appeared (placeholders.py).
Symlinks are never granted (a grant follows the link); their targets are granted where they are.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.record import field, record
from gtd.sandbox.policy.containment import inside, strictly_inside

# Host device nodes a command needs (there is no private /dev): written, or only read. Not /dev/pts: those
# are the person's other terminals (the command's own terminal stays writable: the launcher grants it).
DEVICES_WRITABLE = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
DEVICES_READABLE = ("/dev/random", "/dev/urandom")
# Never granted as part of "/": replaced by the device list above and the session's private tmp dir.
NOT_FROM_ROOT = ("/dev", "/tmp")


@record
class LandlockRules:
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    watched: list[tuple[Path, Path]] = field(default_factory=list)  # (missing protected path, first missing part)
    # writable root outside the workspace -> the existing protected paths in it, granted with it (kept and
    # put back by host/protected_copies.py)
    guarded: dict = field(default_factory=dict)
    reaches_workspace: bool = False  # a writable hierarchy in or around the work tree (gitguard walks it)

    def launcher_args(self) -> list[str]:
        args: list[str] = []
        for path in self.writes:
            args += ["--write", path]
        for path in self.reads:
            args += ["--read", path]
        return args


def _split(root: str, excluded: set[str], out: list[str]) -> None:
    """Grant `root` whole when nothing in `excluded` lies inside it, else each of its entries (recursively);
    an excluded path and a symlink are never granted."""
    if root in excluded or os.path.islink(root):
        return
    if not any(e.startswith(root.rstrip("/") + "/") for e in excluded):
        if os.path.lexists(root):
            out.append(root)
        return
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return  # not a directory (or unreadable): nothing below it to grant
    for name in names:
        _split(os.path.join(root, name), excluded, out)


def _both(paths) -> set[str]:
    """Each path as spelled and resolved: Landlock sees the resolved one, the policy may spell either."""
    found: set[str] = set()
    for p in paths:
        found.add(os.path.normpath(str(p)))
        try:
            found.add(os.path.realpath(p))
        except OSError:
            pass
    return found


def rules_for(policy, writable_roots, private_tmp: Path, split=lambda root: True) -> LandlockRules:
    """The read and write grants for `policy`. `writable_roots`: writable_roots(policy) (existing, resolved,
    checked); `private_tmp`: the session's own temporary dir (TMPDIR). A root is split around its protected
    paths (host git, gtd and the person's tools read them while the session runs), except an agent CLI's
    state dir (_agent_state): that is granted whole, its protected paths in `guarded`, unless `split(root)`
    (their copies would be too big)."""
    from gtd.sandbox.policy.home_allow import hidden_roots, visible_roots

    rules = LandlockRules()
    denied = _both(d for d in policy.deny_read if os.path.lexists(d))
    protected = _both(policy.protected)

    # Writes first: each root except the protected paths and denied reads inside it.
    for root in dict.fromkeys(str(r.real) for r in writable_roots):
        before = len(rules.writes)
        if not _agent_state(root) or root in protected or split(root):
            _split(root, protected | denied, rules.writes)
        else:
            _split(root, denied, rules.writes)
            rules.guarded[root] = _outermost_existing(root, protected)
        granted = rules.writes[before:]
        if any((inside(Path(g), policy.workspace) or inside(policy.workspace, Path(g))) and os.path.isdir(g)
               for g in granted):  # a writable file cannot gain entries: no `.git` can be planted through it
            rules.reaches_workspace = True
        rules.watched += _watched(policy, root, granted)
    rules.writes += [str(private_tmp)] + [d for d in DEVICES_WRITABLE if os.path.exists(d)]

    # Reads: / except every hidden area, then what must be seen inside them, each on its own.
    hidden = _both(hidden_roots(policy)) | denied | set(NOT_FROM_ROOT)
    _split("/", hidden, rules.reads)
    shown = [source for source, _ in visible_roots(policy)]
    shown += [c.source for c in policy.credential_files]
    for source in dict.fromkeys(os.path.realpath(s) for s in shown):
        if any(inside(Path(source), Path(r)) for r in rules.reads) or source in denied:
            continue
        _split(source, denied, rules.reads)
    rules.reads += [d for d in DEVICES_READABLE if os.path.exists(d)]
    return rules


def _agent_state(root: str) -> bool:
    """Whether `root` is an agent CLI's own state dir (under gtd's agents dir), whose protected files only that
    CLI reads, inside the sandbox. Everywhere else a protected path may be read on the host while the session
    runs (the work tree's git metadata by host git, gtd's own config, shell rc files), so it is never granted."""
    from gtd import paths

    agents = Path(os.path.realpath(paths.agents_dir()))
    own = [Path(os.path.realpath(p)) for p in (paths.user_config_dir(), paths.user_state_dir())]
    return strictly_inside(Path(root), agents) and not any(inside(o, Path(root)) or inside(Path(root), o) for o in own)


def _outermost_existing(root: str, protected: set[str]) -> list[Path]:
    inner = sorted(p for p in protected if p.startswith(root.rstrip("/") + "/") and os.path.lexists(p))
    outer: list[str] = []
    for p in inner:
        if not any(p.startswith(o + "/") for o in outer):
            outer.append(p)
    return [Path(p) for p in outer]


def _watched(policy, root: str, granted: list[str]) -> list[tuple[Path, Path]]:
    """(protected path, its first missing component) for each missing protected path that a command could
    create because that component's parent lies in a granted hierarchy."""
    found = []
    for p in policy.protected:
        if not strictly_inside(p, Path(root)) or os.path.lexists(p):
            continue
        first = p
        while not os.path.lexists(first.parent) and first.parent != first:
            first = first.parent
        if any(inside(first.parent, Path(g)) for g in granted):
            found.append((p, first))
    return found


def private_tmp_dir() -> Path:
    """A fresh 0700 directory under /tmp, the session's TMPDIR (the sandbox cannot read /tmp itself)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="gtd-landlock-", dir="/tmp"))
