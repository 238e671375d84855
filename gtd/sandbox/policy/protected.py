"""Paths the agent must never change, even inside a writable workspace.

Anything gtd or the host later *executes or trusts* is protected: git hooks, config and history (for the
repository, nested repositories at any depth, submodule and worktree gitdirs, a configured
core.hooksPath and config include files), shell/editor config, the agent CLIs' own settings and
hook/plugin dirs, and gtd's own config/state. Discovery reads files directly (no `git` process)
so it stays cheap enough to run once per phase.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gtd.sandbox.policy import protected_names
from gtd.sandbox.policy.containment import strictly_inside
from gtd.sandbox.host.gitguard import BARE, UNREADABLE, GitState, work_tree_dirs
from gtd.workspace_files import read_metadata_text

# The names come from one maintained table (protected_names.py), each entry naming the host tool and what
# it runs. package.json keys (simple-git-hooks, yorkie, ghooks, husky v4) are *not* protected: the agent
# edits package.json for ordinary work, and those managers only install hooks into the (read-only) git
# dir when the host runs `npm install` -- see docs/security-model.md, residual risks.
SHELL_RC_NAMES = protected_names.SHELL_RC_NAMES
HOOK_MANAGER_NAMES = tuple(dict.fromkeys(n for tool in protected_names.HOOK_MANAGERS
                                         for n in protected_names.names(protected_names.REPO, tool=tool)))
# Agent CLIs' project config (settings, hooks, MCP servers, commands they run), whether or not the CLI is
# installed, in every directory of the work tree: a later unsandboxed session of that CLI trusts them.
AGENT_CONFIG_NAMES = protected_names.names(protected_names.ANY_DIR)
# Relative to the workspace root (and any nested repository's work tree).
REPO_PROTECTED_NAMES = protected_names.names(protected_names.REPO, protected_names.ANY_DIR)
# Relative to HOME: only matters where a config layer or provider makes part of HOME writable.
HOME_PROTECTED_NAMES = protected_names.names(protected_names.HOME)

# Each git dir is protected *as a whole*: everything host git reads there, existing or not (hooks,
# config, history, refs and `refs/replace` also in packed-refs, shallow, info/grafts, info/exclude,
# info/attributes, objects/info/alternates, commondir, worktree and submodule gitdirs, rebase todos,
# and the index, whose assume-unchanged/skip-worktree bits could hide the agent's edits from gtd's
# commit) is read-only or uncreatable below level full. Reading git works inside; the sandbox's
# `git` wrapper (gitshim.py) gives restore/checkout a throwaway index and one clear line for the rest.

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(.*)")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


def git_config_facts(config_file: Path) -> tuple[list[str], list[str]]:
    """(files git runs or trusts: core.hooksPath, core.excludesFile, core.attributesFile values;
    include paths) from one git config file, without spawning git. An excludes file the agent could
    write would hide its files from gtd's commit. Read following links (read_metadata_text), as git does:
    what is found here is only protected more (made read-only), and the files are in git dirs, which are
    read-only inside, so a link the agent planted could only add protection, never remove any."""
    hooks, includes = [], []
    text = read_metadata_text(config_file)
    if text is None:
        return hooks, includes
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1).lower()
            line = m.group(3).strip()
            if not line:
                continue
        e = _ENTRY.match(line)
        if not e:
            continue
        key, value = e.group(1).lower(), _unquote(e.group(2) or "")
        if section == "core" and key in ("hookspath", "excludesfile", "attributesfile") and value:
            hooks.append(value)
        elif section in ("include", "includeif") and key == "path" and value:
            includes.append(value)
    return hooks, includes


def _unquote(value: str) -> str:
    value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return value


def _expand(value: str, base: Path, home: Path) -> Path:
    if value.startswith("~/") or value == "~":
        return home / value[2:]
    p = Path(value)
    return p if p.is_absolute() else base / p


def _gitdir_of(dot_git: Path) -> Path | None:
    """The git dir a `.git` entry names: itself if a directory, the `gitdir:` target if a file."""
    if dot_git.is_dir():
        return dot_git
    lines = (read_metadata_text(dot_git) or "").splitlines()
    if not lines:
        return None
    first = lines[0]
    if first.startswith("gitdir:"):
        return _expand(first[len("gitdir:") :].strip(), dot_git.parent, Path.home())
    return None


def linked_worktree_git_dirs(workspace: Path) -> list[tuple[Path, Path]]:
    """(resolved directory, the path git spells it as) for the gitdir and the common dir of a linked
    worktree at `workspace`. Only when the link holds both ways (the gitdir's own `gitdir` file names
    this worktree's `.git`) and the common dir is a git dir: a `.git` file alone may name any
    directory, and what this returns is made visible inside the sandbox. A symlinked `.git` is refused;
    the `gitdir` and `commondir` files read (links followed, as git follows them) are in the git dir
    itself, outside the work tree or read-only inside, so the agent cannot redirect them."""
    dot_git = workspace / ".git"
    if dot_git.is_symlink() or not dot_git.is_file():
        return []
    spelled = _gitdir_of(dot_git)
    if spelled is None:
        return []
    spelled = Path(os.path.normpath(spelled))
    try:  # the pointers may lead where gtd cannot resolve (/proc/1/root/...): then there is no linked worktree
        gitdir = Path(os.path.realpath(spelled))
        back = (read_metadata_text(gitdir / "gitdir") or "").strip()
        if not back or os.path.realpath(_expand(back, gitdir, Path.home())) != os.path.realpath(dot_git):
            return []
        pointer = (read_metadata_text(gitdir / "commondir") or "").strip()
        if not pointer:
            return []
        common = Path(os.path.realpath(_expand(pointer, gitdir, Path.home())))
    except OSError:
        return []
    if not (common / "HEAD").is_file() or not (common / "objects").is_dir():
        return []
    return [(gitdir, spelled), (common, Path(os.path.normpath(_expand(pointer, spelled, Path.home()))))]


def _resolved(path: Path) -> Path:
    """The path resolved, for telling the same git dir or config apart; as spelled when gtd may not resolve
    it (/proc/1/root/...): it is still protected as spelled, and a start never dies of it."""
    try:
        return path.resolve()
    except OSError:
        return Path(os.path.normpath(path))


def _gitdir_protected(gitdir: Path, worktree: Path, home: Path, seen: set[Path], state: GitState) -> list[Path]:
    """Hooks, config, hooksPath dirs and config includes of one git dir, then its submodules/worktrees."""
    key = _resolved(gitdir)
    if key in seen:
        return []
    seen.add(key)
    found = [gitdir]
    state.add_gitdir(gitdir)
    commondir = gitdir / "commondir"
    if commondir.is_file():  # linked worktree: hooks and config live in the common dir
        pointer = (read_metadata_text(commondir) or "").strip()
        if pointer:
            found += _gitdir_protected(_expand(pointer, gitdir, home), worktree, home, seen, state)
    configs = [gitdir / "config", gitdir / "config.worktree"]
    while configs:
        cfg = configs.pop()
        hooks, includes = git_config_facts(cfg)
        found += [_expand(h, worktree, home) for h in hooks]
        for inc in includes:
            inc_path = _expand(inc, cfg.parent, home)
            found.append(inc_path)
            if inc_path not in configs and _resolved(inc_path) not in seen:
                seen.add(_resolved(inc_path))
                configs.append(inc_path)
    for sub in ("modules", "worktrees"):
        base = gitdir / sub
        if base.is_dir():
            for dirpath, dirnames, filenames in os.walk(base):
                if "HEAD" in filenames and ("config" in filenames or "commondir" in filenames or sub == "worktrees"):
                    found += _gitdir_protected(Path(dirpath), worktree, home, seen, state)
                    dirnames[:] = [d for d in dirnames if d == "modules"]  # nested submodules only
    return found


def repo_protected_paths(workspace: Path, home: Path, state: GitState | None = None, *, nested: bool = True) -> list[Path]:
    """Protected paths of the repository at `workspace` and every repository nested in it.

    `state` records the git metadata seen, the baseline `gitguard.planted` compares against.
    `nested` False: the workspace's own repository only, without walking the work tree (for a policy
    under which nothing in the work tree is writable: a nested repository there is read-only anyway);
    `state.walked` says which.
    """
    state = state if state is not None else GitState()
    state.walked = nested
    found: list[Path] = []
    seen: set[Path] = set()
    state.names = frozenset(AGENT_CONFIG_NAMES)
    tree = work_tree_dirs(workspace, state.links, state.named, state.names) if nested else [(str(workspace), None)]
    for dirpath, kind in tree:
        if kind == UNREADABLE:
            state.unreadable.add(dirpath)
            continue
        if kind == BARE and dirpath != str(workspace):  # a bare repository in the work tree: a git dir as a whole
            state.bare.add(dirpath)
            found += _gitdir_protected(Path(dirpath), Path(dirpath), home, seen, state)
            continue
        if kind is None and dirpath != str(workspace):
            continue
        here = Path(dirpath)
        found += [here / name for name in REPO_PROTECTED_NAMES]
        dot_git = here / ".git"
        if dot_git.exists() or dot_git.is_symlink():
            state.dot_git.add(os.path.join(dirpath, ".git"))
            if not dot_git.is_dir():
                found.append(dot_git)  # a `.git` file could be repointed at a planted gitdir
            gitdir = _gitdir_of(dot_git)
            if gitdir is not None:
                found += _gitdir_protected(gitdir, here, home, seen, state)
    at_roots = set(found)  # an agent CLI's config anywhere else in the work tree: read-only as it is
    return found + [p for p in map(Path, sorted(state.named)) if p not in at_roots]


def home_protected_paths(home: Path, workspace: Path) -> list[Path]:
    """HOME's rc/agent files, every PATH directory below HOME, plus hooksPath dirs and includes named
    by the global git config."""
    found = [home / name for name in HOME_PROTECTED_NAMES]
    found += path_dirs_in_home(home, workspace)
    configs = [Path("/etc/gitconfig"), home / ".gitconfig", home / ".config/git/config"]
    seen: set[Path] = set()
    while configs:
        cfg = configs.pop()
        if cfg in seen:
            continue
        seen.add(cfg)
        hooks, includes = git_config_facts(cfg)
        found += [_expand(h, workspace, home) for h in hooks]
        for inc in includes:
            inc_path = _expand(inc, cfg.parent, home)
            found.append(inc_path)
            configs.append(inc_path)
    return found


def path_dirs_in_home(home: Path, workspace: Path) -> list[Path]:
    """Directories on the host's PATH below HOME (`~/bin`, `~/.local/bin`, a version manager's bin):
    the host runs what they hold by name. A project's own bin dir inside the workspace is left
    writable (the agent's code runs on the host anyway through the project's tests), unless the
    workspace is HOME itself."""
    found = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        p = Path(os.path.normpath(entry))
        if not strictly_inside(p, home):
            continue
        if workspace != home and strictly_inside(p, workspace):
            continue
        found.append(p)
    return found


def protected_in_work_tree(workspace: Path, path: str) -> bool:
    """Whether gtd's host side must leave the work-tree file `path` (relative to `workspace`) alone: it is
    in a git dir, or is (or is below) one of REPO_PROTECTED_NAMES in any directory (any nested repository's
    root included), or is a file the repository's git config names (hooksPath, excludesFile, includes)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".git" in parts:
        return True
    for i in range(len(parts)):
        tail = "/".join(parts[i:])
        if any(tail == name or tail.startswith(name + "/") for name in REPO_PROTECTED_NAMES):
            return True
    full = os.path.normpath(os.path.join(workspace, *parts))
    return any(full == os.path.normpath(p) or full.startswith(os.path.normpath(p) + os.sep)
               for p in repo_protected_paths(workspace, Path.home(), nested=False))
