"""Git operations gtd performs itself, always outside the sandbox."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gtd.errors import GtdError

# Used when the repository has no identity configured (fresh CI machines, temp demo repos).
FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "gtd", "GIT_AUTHOR_EMAIL": "gtd@localhost",
                     "GIT_COMMITTER_NAME": "gtd", "GIT_COMMITTER_EMAIL": "gtd@localhost"}


# gtd's own commits never run repository hooks: hooks (husky, pre-commit, ...) execute scripts and
# config the agent could have edited in the work tree, which would run them outside the sandbox.
# Nor an fsmonitor command (run by every status/add, also in nested repositories: `-c` reaches the
# child gits): belt and braces behind the sandbox's quarantine of planted git metadata.
NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        ["git", *NO_HOOKS, *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    if check and result.returncode != 0:
        raise GtdError(f"git {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _identity_env(repo: Path) -> dict[str, str]:
    if git(repo, "config", "user.email", check=False).strip():
        return {}
    return FALLBACK_IDENTITY


@dataclass(frozen=True)
class Change:
    status: str  # two-letter porcelain code, e.g. " M", "??", "A "
    path: str


def changes(repo: Path) -> list[Change]:
    """Uncommitted changes, untracked files included (ignored files are not)."""
    out = git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries = out.split("\0")
    result, i = [], 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":  # renames carry the old path as the next entry
            i += 1
        result.append(Change(code, path))
    return result


def has_commits(repo: Path) -> bool:
    return git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip() != ""


def commit_all(repo: Path, message: str, *, allow_empty: bool = False) -> str | None:
    """Stage everything and commit. Returns the new sha, or None if there was nothing to commit."""
    git(repo, "add", "-A")
    return _commit(repo, message, allow_empty=allow_empty)


def commit_paths(repo_root: Path, paths: list[str], message: str) -> str | None:
    """Commit only these paths (staging them first), leaving other changes alone."""
    git(repo_root, "add", "--", *paths)
    if not git(repo_root, "diff", "--cached", "--name-only", "--", *paths).strip():
        return None
    git(repo_root, "commit", "-q", "-m", message, "--", *paths, env=_identity_env(repo_root))
    return git(repo_root, "rev-parse", "HEAD").strip()


def _commit(repo: Path, message: str, *, allow_empty: bool = False) -> str | None:
    nothing_staged = has_commits(repo) and not git(repo, "diff", "--cached", "--name-only").strip()
    if nothing_staged and not allow_empty:
        return None
    git(repo, "commit", "-q", "--allow-empty", "-m", message, env=_identity_env(repo))
    return git(repo, "rev-parse", "HEAD").strip()


def subjects(repo: Path, limit: int = 200) -> list[str]:
    """Commit subjects, newest first."""
    if not has_commits(repo):
        return []
    return git(repo, "log", f"-{limit}", "--format=%s").splitlines()


def diff_of_changes(repo: Path, max_chars: int = 20000) -> str:
    """The uncommitted diff (tracked files) plus the content of new files, for prompts."""
    git(repo, "add", "-A", "--intent-to-add")
    text = git(repo, "diff", "HEAD" if has_commits(repo) else "--cached")
    return text[:max_chars]


def diff_since(repo: Path, rev: str, paths: list[str] | None = None, max_chars: int = 20000) -> str:
    return git(repo, "diff", rev, "HEAD", "--", *(paths or []))[:max_chars]
