"""Git metadata the agent planted during a run, found and quarantined once the sandbox is gone.

Every git dir known when the policy is built is mounted read-only as a whole, so nothing can be
created inside it (the checks on gitdir entries below are a backstop). What mounts cannot stop is
a *new* repository anywhere in the work tree, which git on the host honours afterwards (gtd's own
`git status`/`add`/`commit`, or the user's shell prompt):

- `<gitdir>/commondir`: makes git read config and hooks from any directory the agent wrote, so
  `core.fsmonitor` or `filter.*.clean` run on the next `git status`/`git add`. A read-only empty
  placeholder would break git (it dies on an empty commondir): the read-only git dir prevents it.
- a new repository anywhere in the work tree (a `.git` directory, or a `.git` file naming any
  gitdir): host git recurses into it for submodule status and runs its config.
- a new *bare* repository anywhere in the work tree (a directory holding HEAD, objects and refs,
  named anything): git run inside it (the user's shell prompt, `git log` and its `core.pager`)
  takes it for the repository and runs its config; gtd's `git add -A` would commit it for every clone.
- a directory that cannot be listed (`chmod 0111`): nothing below it can be checked, so it goes
  as a whole (the user, or a `chmod -R`, would otherwise reveal what it hides to host git). The work
  tree's root cannot go: its owner's rwx is given back and it is walked (and reported).
- a new symlink in the work tree into a place outside it that the agent can write and the host keeps
  (a package cache's copy-on-write layer in gtd's state dir, an agent CLI's state dir): `cd docs` then
  lands in a repository (or `.envrc`, `.vscode`, ...) the agent made there, out of every check above.
- a new agent CLI config (`.claude/`, `opencode.json`, `.pi/`, ...; `GitState.names`) in any directory
  of the work tree, not only at a repository's root: the person's own CLI run in that directory
  (`cd packages/app && claude`; opencode reads every opencode.json up to the repository) trusts it.
- a new gitdir under `<gitdir>/modules` or `<gitdir>/worktrees`: `git submodule update` and
  `git worktree` adopt it.
- `rebase-merge`/`rebase-apply`/`sequencer`: `git rebase --continue` runs the todo's `exec` lines.

The state is recorded during the walk `protected.py` already does (no extra start-up cost) and
compared after every sandboxed process has exited; offenders are moved to gtd's per-project state
dir (nothing is deleted) and reported as violations.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.record import field, record
from gtd.sandbox.host.locked_tree import give_back_owner_rwx, remove_tree

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterator

# Inside a gitdir: honoured by host git if the agent creates them (existing ones are mounted read-only).
PLANTABLE_IN_GITDIR = ("commondir", "rebase-merge", "rebase-apply", "sequencer")


# What one work-tree directory holds, as far as host git is concerned (work_tree_dirs).
DOT_GIT = "dot_git"  # a `.git` entry of any type
BARE = "bare"  # the directory itself looks like a git dir: git discovers it from inside as a bare repository
UNREADABLE = "unreadable"  # it cannot be listed, so what is below it is unknown
GITDIR_ENTRIES = frozenset(("HEAD", "objects", "refs"))  # what git's discovery needs to take a directory for a git dir


@record
class GitState:
    """The git metadata present when the policy was built: the baseline for `planted`."""

    dot_git: set[str] = field(default_factory=set)  # every `.git` entry in the work tree
    gitdirs: set[str] = field(default_factory=set)  # every known gitdir (repos, submodules, worktrees)
    present: set[str] = field(default_factory=set)  # PLANTABLE_IN_GITDIR entries that already existed
    bare: set[str] = field(default_factory=set)  # work-tree directories that already looked like git dirs
    unreadable: set[str] = field(default_factory=set)  # work-tree directories that could not be listed
    links: dict[str, int] = field(default_factory=dict)  # work-tree symlinks: path -> inode
    names: frozenset[str] = frozenset()  # entry names the agent may not create anywhere in the work tree
    named: set[str] = field(default_factory=set)  # work-tree entries with one of `names` (any directory)
    walked: bool = True  # the whole work tree was walked (False: only the workspace's own repository)

    def add_gitdir(self, gitdir: Path) -> list[Path]:
        """Record a gitdir; returns its plantable entries that exist now (to be mounted read-only).
        Recorded normalised (a worktree's commondir spells `../..`), as `planted` compares them."""
        gitdir = Path(os.path.normpath(gitdir))
        self.gitdirs.add(str(gitdir))
        existing = []
        for name in PLANTABLE_IN_GITDIR:
            p = gitdir / name
            if os.path.lexists(p):
                self.present.add(str(p))
                existing.append(p)
        return existing


def work_tree_dirs(top: Path | str, links: dict[str, int] | None = None, named: set[str] | None = None,
                   names: frozenset[str] = frozenset()) -> Iterator[tuple[str, str | None]]:
    """(directory, what it holds: DOT_GIT, BARE, UNREADABLE or None) for `top` and every directory below
    it, parents first (os.walk's top-down order), never into a `.git`, a bare git dir or through a
    symlink. One scandir per directory and no stat per entry: the work tree (node_modules, a venv) is
    walked twice per session, at start (protected.py) and after the last command (`planted`). A
    directory below `top` that cannot be listed for lack of permission is reported as UNREADABLE;
    one that vanished meanwhile is skipped. `links` collects every symlink seen (path -> inode, both
    from the directory listing: no extra system call), `named` every entry whose name is in `names`."""
    top = os.fspath(top)
    stack = [top]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as entries:
                has_git, below, gitdir_like = False, [], 0
                for entry in entries:
                    if entry.name == ".git":
                        has_git = True
                        continue
                    gitdir_like += entry.name in GITDIR_ENTRIES
                    if entry.name in names and named is not None:
                        named.add(entry.path)
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            below.append(entry.path)
                        elif links is not None and entry.is_symlink():
                            links[entry.path] = entry.inode()
                    except OSError:
                        pass
        except PermissionError:
            if here != top:
                parent = os.path.dirname(here)
                # listed but not enterable (`chmod 0444`): the parent is what hides it
                yield (parent, UNREADABLE) if parent != os.fspath(top) and not os.access(parent, os.X_OK) else (here, UNREADABLE)
            continue
        except OSError:
            continue
        kind = DOT_GIT if has_git else BARE if gitdir_like == len(GITDIR_ENTRIES) else None
        yield here, kind
        if kind != BARE or here == top:  # a git dir is not work tree (the workspace root always is)
            stack.extend(reversed(below))


def planted(state: GitState, workspace: Path, *, walk_tree: bool = True,
            outside_writable: tuple[str, ...] = ()) -> dict[Path, str]:
    """What exists now but did not when `state` was recorded (outermost paths only), each with what it is.

    `walk_tree` False: no sandboxed command had a writable directory in or around the work tree (it was
    mounted read-only, bar single files), so no `.git` can have appeared in it and the walk (the
    larger part of a short command's cost in a work tree with node_modules or a venv) is skipped;
    the git dirs themselves are still checked. `outside_writable`: the resolved places outside the work
    tree the agent could write that the host keeps; a symlink that is new (or was replaced) since the
    start and resolves into one of them is found too."""
    found: list[Path] = []
    links: dict[str, int] = {}
    named: set[str] = set()
    what: dict[Path, str] = {}
    if walk_tree and os.path.isdir(workspace) and not os.access(workspace, os.R_OK | os.X_OK):  # `chmod 0311 .`
        give_back_owner_rwx(Path(workspace), below=False)
        what[Path(workspace)] = ROOT_LOCKED
    # The roots of the repositories present at the start: their protected names are the placeholder
    # registry's (placeholders.py), which knows no repository planted since.
    roots = {os.fspath(workspace), *map(os.path.dirname, state.dot_git)}
    for dirpath, kind in work_tree_dirs(workspace, links, named, state.names) if walk_tree else ():
        if kind == DOT_GIT:
            p = os.path.join(dirpath, ".git")
            if p not in state.dot_git:
                found.append(Path(p))
        elif kind == BARE and dirpath not in state.bare and dirpath != os.fspath(workspace):
            found.append(Path(dirpath))
        elif kind == UNREADABLE and dirpath not in state.unreadable:
            found.append(Path(dirpath))
    what.update((p, "planted git metadata") for p in found)
    for link, inode in links.items():
        if state.links.get(link) != inode and _resolves_into(link, outside_writable):
            what[Path(link)] = LINK_OUT
    what.update((Path(p), AGENT_CONFIG) for p in sorted(named - state.named) if os.path.dirname(p) not in roots)
    for gitdir in sorted(state.gitdirs):
        g = Path(gitdir)
        if not g.is_dir() or g.is_symlink():
            continue
        for name in PLANTABLE_IN_GITDIR:
            p = g / name
            if os.path.lexists(p) and str(p) not in state.present:
                what[p] = "planted git metadata"
        for sub in ("modules", "worktrees"):
            base = g / sub
            if base.is_dir() and not base.is_symlink():
                what.update((p, "planted git metadata") for p in _new_gitdirs(base, state.gitdirs))
    return what


def _resolves_into(link: str, roots: tuple[str, ...]) -> bool:
    try:
        real = os.path.realpath(link)
    except OSError:  # it leads somewhere gtd may not resolve (/proc/1/root/...): taken as leading out
        return True
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _new_gitdirs(base: Path, known: set[str]) -> list[Path]:
    """Directories below modules/ or worktrees/ that look like gitdirs and were not known."""
    new = []
    for dirpath, dirnames, filenames in os.walk(base):
        if dirpath in known:
            dirnames[:] = [d for d in dirnames if d == "modules"]  # its nested submodules, not logs/HEAD
            continue
        if "HEAD" in filenames or "commondir" in filenames or "config" in filenames:
            new.append(Path(dirpath))
            dirnames[:] = []
    return new


LINK_OUT = "a symlink into a place outside the workspace the agent can write"
AGENT_CONFIG = "an agent CLI's config, which the person's own CLI run in that directory would trust"
ROOT_LOCKED = "the work tree's root could not be listed; its owner's rwx given back to check what is below it"


def quarantine(paths: list[Path], workspace: Path, into: Path, *, what: dict[Path, str] | None = None) -> list[tuple[Path, str]]:
    """Move each path under `into/<UTC time>/` (keeping its path relative to the workspace).

    Returns (path, what happened) pairs, each told as `what` names it (default: planted git metadata).
    If a move fails the path is removed: leaving it would let host git run it. The workspace itself (its
    root locked, ROOT_LOCKED) is only reported.
    """
    if not paths:
        return []  # the usual case: nothing planted (and no datetime import, ~2 ms of every close)
    from datetime import datetime, timezone  # here: only a planted entry is quarantined

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    done = []
    for p in paths:
        label = (what or {}).get(p, "planted git metadata")
        if not os.path.lexists(p):
            continue  # inside something already moved
        if p == workspace:
            done.append((p, label))
            continue
        try:
            rel = p.relative_to(workspace)
        except ValueError:
            rel = Path(*p.parts[1:])
        dest = into / stamp / rel.parent / (rel.name + ".quarantined")  # no longer named `.git`
        import shutil  # here: only a planted .git needs it

        try:
            # moving a directory to another parent rewrites its `..` entry: write permission on it is needed
            give_back_owner_rwx(p, below=False)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(p), str(dest))
            done.append((p, f"{label}; quarantined in {dest}"))
        except OSError as exc:
            try:
                remove_tree(p)  # directories below it the agent locked (chmod 0000) are given back first
                done.append((p, f"{label}; removed (could not quarantine: {exc})"))
            except OSError as exc2:
                done.append((p, f"{label}; COULD NOT REMOVE ({exc2}): do not run git here"))
    return done


# -- a session that never closed (gtd killed: SIGKILL, a crash, power loss) ------------------------------
# Its baseline is written when it starts and removed when it closes; the next session of the project finds
# a left-over one whose owner is gone and quarantines what is new against it, before its own baseline
# would take the agent's repository for the person's. The owner holds an exclusive flock on its journal
# for its lifetime: the kernel drops it with the process, whatever killed it, where a pid (reused after a
# reboot) would keep a left-over journal "alive" forever.

_JOURNALED = ("dot_git", "gitdirs", "present", "bare", "unreadable", "named")
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC


def _journal_dir(workspace: Path) -> Path:
    from gtd import paths

    return paths.project_state_dir(workspace) / "baselines"


@record
class Journal:
    """A session's baseline on disk, locked (flock) by the session until `close`."""

    path: Path
    fd: int

    def close(self) -> None:
        """The session closed: its baseline is no longer needed."""
        self.path.unlink(missing_ok=True)
        os.close(self.fd)


def remember(state: GitState, workspace: Path) -> Journal:
    """Write `state` for a later session to settle should this one never close, locked while it runs."""
    import fcntl
    import json

    directory = _journal_dir(workspace)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / f"{os.getpid()}-{id(state):x}.json"
    data = {"pid": os.getpid(), "names": sorted(state.names), **{k: sorted(getattr(state, k)) for k in _JOURNALED}}
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY | _OPEN, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # before it is named *.json: no session ever sees it unlocked
        os.write(fd, json.dumps(data).encode())
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        raise
    return Journal(path, fd)


def settle(state: GitState, workspace: Path, into: Path) -> list[tuple[Path, str]]:
    """Quarantine what sessions that never closed left behind (each judged against its own baseline),
    and drop it from `state`, the baseline just taken, which saw it as present."""
    done: list[tuple[Path, str]] = []
    try:
        journals = sorted(_journal_dir(workspace).glob("*.json"))
    except OSError:
        return done
    for journal in journals:
        old = _left_over(journal)
        if old is None:
            continue
        found = planted(old, workspace)
        done += quarantine(list(found), workspace, into, what=found)
        for path in map(str, found):
            for name in _JOURNALED:
                getattr(state, name).discard(path)
            state.dot_git.discard(path)
        journal.unlink(missing_ok=True)
    return done


def _left_over(journal: Path) -> GitState | None:
    """The baseline in `journal` if its session is gone (nothing holds its lock), else None. One that
    cannot be read is removed."""
    import fcntl
    import json

    try:
        fd = os.open(journal, os.O_RDONLY | _OPEN)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # its session is running: its own close settles it
        try:
            with os.fdopen(os.dup(fd), "rb") as f:
                data = json.loads(f.read())
            return GitState(names=frozenset(data["names"]), **{k: set(data[k]) for k in _JOURNALED})
        except (OSError, ValueError, KeyError, TypeError):
            journal.unlink(missing_ok=True)
            return None
    finally:
        os.close(fd)
