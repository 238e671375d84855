"""The agent's unfinished work: which uncommitted changes are the agent's, even after a crash.

gtd only commits finished steps. When a phase stops early (tests still red, an escalation pending,
Ctrl-C, even `kill -9` of gtd) the agent's changes stay in the work tree, and the next run must carry
them on, never commit them as the person's 🔧 fix. So while the agent runs, gtd records in its own
state dir (out of the agent's reach) the work tree as the agent left it: a git tree id, by content,
taken when the agent starts (the base), after each of its tool calls and when it ends.

The classification is per path, by content, against that record:
- a path the agent changed (base -> recorded tree) that still holds what the agent wrote is the agent's;
- a path the agent changed that the person edited since (the work tree differs from the record) stays
  with the agent's work (it carries on with it) and is named as edited by the person;
- any other uncommitted change is the person's.
gtd's own commits (a 🔐 approval of .gtdrc.json) move HEAD but change no path the agent touched, so
they change nothing here; nor does a person's edit elsewhere.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from gtd.paths import project_state_dir
from gtd.record import field, record
from gtd.workflow import git

MARKER = "agent-work.json"
INDEX = "agent-work.index"  # the last snapshot's index: its stat data spares re-reading unchanged files
_OWNER = os.urandom(8).hex()  # this process's mark on a record its agent runs under (a pid can be reused)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
RUNNING = "running"  # the record's reason while its agent runs
KILLED = "gtd was killed while the agent ran"  # RUNNING, and no run holds the repository any more


def _marker(repo: Path) -> Path:
    return project_state_dir(repo) / MARKER


@record
class AgentWork:
    """The agent's unfinished work as the last record and the work tree say now."""

    phase: str
    provider: str
    session: str | None
    reason: str
    paths: list[str] = field(default_factory=list)  # uncommitted and still exactly what the agent left
    edited: list[str] = field(default_factory=list)  # the agent's paths the person edited since: carried on too
    person: list[str] = field(default_factory=list)  # every other uncommitted change: the person's

    @property
    def all_paths(self) -> list[str]:
        return sorted(self.paths + self.edited)


# A snapshot's `git add -A` runs while the agent is still at work: a FIFO it makes at a name git opens
# (.gitignore) between the sweep before the run (special_files) and git's open would hold it for the whole
# git timeout. A short bound, then one more run (which sweeps again), keeps the agent's phase moving.
SNAPSHOT_GIT_SECONDS = 20.0


def worktree_tree(repo: Path, *, leave_out: tuple[str, ...] = (), keep: bool = False,
                  timeout: float | None = None) -> str:
    """The git tree id of the whole work tree as it is now (untracked files included, ignored ones not;
    `leave_out` paths left out), via a throw-away index so the real index is left alone. It starts as a
    copy of the index the last snapshot kept in gtd's state (`keep`: this one is kept in its place), else
    of the real index, so git re-reads only the files whose stat changed: a fresh index would hash every
    file (an agent's untracked node_modules too) after every tool call. The copies keep the file's mtime,
    which git's racy-clean check compares its entries with. A start git cannot read (a split index) falls
    back to HEAD's tree."""
    import shutil

    from gtd.errors import GtdError

    kept = project_state_dir(repo) / INDEX
    with git.temporary_index() as env:
        try:
            start = kept if kept.is_file() else \
                Path(git.git(repo, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
            shutil.copy2(start, env["GIT_INDEX_FILE"])
            git.git(repo, "add", "-A", env=env, timeout=timeout)
        except (OSError, GtdError):  # a start git cannot read, or a run held past `timeout`: once more, afresh
            for leftover in (env["GIT_INDEX_FILE"], env["GIT_INDEX_FILE"] + ".lock"):  # a killed run leaves its lock
                if os.path.exists(leftover):
                    os.unlink(leftover)
            if git.has_commits(repo):
                git.git(repo, "read-tree", "HEAD", env=env)
            git.git(repo, "add", "-A", env=env, timeout=timeout)
        if leave_out:
            git.git(repo, "--literal-pathspecs", "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *leave_out,
                    env=env)
        elif keep:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(env["GIT_INDEX_FILE"], f"{kept}.new")
            os.replace(f"{kept}.new", kept)
        return git.git(repo, "write-tree", env=env).strip()


def _read(repo: Path) -> dict | None:
    try:
        data = json.loads(_marker(repo).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("base"), str) and \
        isinstance(data.get("tree"), str) else None


def _write(repo: Path, data: dict) -> None:
    write_state(_marker(repo), json.dumps({**data, "updated": time.time()}) + "\n")


def write_state(path: Path, text: str) -> None:
    """Replace a file in gtd's state dir whole (a temp file renamed over it: readers see the old or the
    new text). Not gtd.config.writer's atomic_write: importing it loads pydantic (~300 ms), and this runs
    after every tool call; nor its fsync: a killed gtd loses nothing the kernel already has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _changed(repo: Path, old: str, new: str) -> set[str]:
    if old == new:
        return set()
    out = git.git(repo, "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, check=False)
    return {name for name in out.split("\0") if name}


def _strings(value: object) -> set[str]:
    return {item for item in value if isinstance(item, str)} if isinstance(value, list) else set()


def _head_tree(repo: Path) -> str:
    return git.git(repo, "rev-parse", "HEAD^{tree}").strip() if git.has_commits(repo) else EMPTY_TREE


def pending(repo: Path, *, forget_done: bool = True) -> AgentWork | None:
    """The agent's unfinished work now, or None when no uncommitted change is the agent's (then the
    record is dropped unless `forget_done` is False: `gtd status` only reads)."""
    data = _read(repo)
    if data is None:
        return None
    now = worktree_tree(repo)
    uncommitted = _changed(repo, _head_tree(repo), now)
    agents = _changed(repo, data["base"], data["tree"]) & uncommitted
    if not agents:  # committed, reverted or never made: nothing of the agent's is left
        if forget_done:
            forget(repo)
        return None
    edited = (_changed(repo, data["tree"], now) | _strings(data.get("edited"))) & agents
    reason = str(data.get("reason") or "")
    if reason == RUNNING and data.get("owner") != _OWNER:
        from gtd import runlock

        holder = runlock.holder(repo)
        if holder is None or holder.get("pid") == os.getpid():  # the run whose agent this was holds it no more
            reason = KILLED
    return AgentWork(phase=str(data.get("phase") or ""), provider=str(data.get("provider") or ""),
                     session=data.get("session") if isinstance(data.get("session"), str) else None,
                     reason=reason, paths=sorted(agents - edited), edited=sorted(edited),
                     person=sorted(uncommitted - agents))


def begin(repo: Path, phase: str, provider: str) -> AgentWork | None:
    """Before each agent run: keep the record when this phase's agent has unfinished work to carry on
    (returned), else start a new one whose base is the work tree now."""
    work = pending(repo)
    if work is not None and work.phase == phase:
        data = {**(_read(repo) or {}), "owner": _OWNER, "reason": RUNNING}  # this process's agent now
        data["edited"] = work.edited  # the person's edits in it, still named once the agent's snapshots take them in
        if work.provider != provider:  # another CLI carries it on: the stopped session is not its to resume
            data.update(provider=provider, session=None)
            work.session = None
        _write(repo, data)
        return work  # (no snapshot here: a person's edit since the stop is not the agent's until it runs again)
    tree = worktree_tree(repo, keep=True)
    _write(repo, {"phase": phase, "provider": provider, "session": None, "base": tree, "tree": tree,
                  "reason": RUNNING, "owner": _OWNER})
    return None


def snapshot(repo: Path, *, session: str | None = None, reason: str | None = None) -> None:
    """Record the work tree as the agent has it now (after a tool call, at its end, when the phase stops).
    Only a record this process's agent runs under (`begin`) is updated: a run that stops before its agent
    starts must not take the person's edits since the last stop for the agent's."""
    data = _read(repo)
    if data is None or data.get("owner") != _OWNER:
        return
    data["tree"] = worktree_tree(repo, keep=True, timeout=SNAPSHOT_GIT_SECONDS)
    if session:
        data["session"] = session
    if reason:
        data["reason"] = reason
    _write(repo, data)


def stopped(repo: Path, reason: str) -> bool:
    """A phase stopped early: the record gets the last tree and why. Returns whether the agent left work."""
    data = _read(repo)
    if data is None or data.get("owner") != _OWNER:
        return False
    snapshot(repo, reason=reason)
    return pending(repo) is not None


def forget(repo: Path) -> None:
    """The phase committed its step (or nothing of the agent's is left): the record is done."""
    path = _marker(repo)
    if path.exists():
        path.unlink()
