"""Untracked files gtd must never sweep into a commit of the person's edits: secrets and bulk.

A `.env` with a key, a private key, or a 1,500-file virtualenv that is not in .gitignore is
almost never meant for history. gtd stops and lists them; the person ignores or adds them.

What a build step leaves out of its commit (the agent's secrets and bulk) stays as it is: untracked,
visible in `git status`, named in the step's summary. gtd never untracks a tracked file and never
writes `.git/info/exclude` (issue 22): the person decides. It remembers the names it left out (in its
state, out of the agent's reach), so later steps neither take them for the person's edits nor sweep
them into a commit while they stay untracked.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path, PurePosixPath

from gtd.errors import GtdError
from gtd.record import record

# File names that usually hold credentials. Templates meant for the repository are left alone.
_SECRET_NAME = re.compile(
    r"^(\.env(\..+)?|.*\.(pem|key|p12|pfx|jks|keystore|ppk|kdbx|asc|gpg)|id_[A-Za-z0-9_-]+(\.pub)?|"
    r"credentials(\..+)?|.*[-_.]credentials(\..+)?|secrets?(\.[a-z]+)?|\.npmrc|\.pypirc|\.netrc|\.git-credentials|"
    r"service[-_]account.*\.json|.*\.tfvars|\.htpasswd)$", re.IGNORECASE)
_TEMPLATE = re.compile(r"\.(example|sample|template|dist|defaults?)$", re.IGNORECASE)
# Directories that are generated or installed, never written by hand.
BULK_DIRS = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
                       ".pytest_cache", ".ruff_cache", "dist", "build", "target", ".next", ".nuxt", ".gradle",
                       ".cache", "coverage", "htmlcov", ".parcel-cache", ".terraform", "vendor"})
BULK_FILE_COUNT = 200  # this many new files under one new directory is bulk whatever its name
LEFT_OUT_FILE = "left-out.json"  # in the project's state dir: the untracked files a step left out


@record(frozen=True)
class UnsafeEntry:
    path: str  # a file, or a directory (ending in "/") standing for the files under it
    why: str  # "secret" or "bulk"
    files: int = 1

    def to_json(self) -> dict:
        return {"path": self.path, "why": self.why, "files": self.files}


class UnsafeFiles(GtdError):
    """The person's untracked files include secrets or bulk: nothing was committed."""

    def __init__(self, entries: list[UnsafeEntry]):
        self.entries = entries
        listed = "\n".join(f"  {e.path}  ({e.why}{f', {e.files} files' if e.files > 1 else ''})" for e in entries)
        super().__init__(
            "not committing your edits: these untracked files look like secrets or generated bulk:\n" + listed +
            "\nAdd them to .gitignore (or .git/info/exclude), or `git add` them yourself if they belong in the "
            "repository, then run gtd again.")


def _is_secret(name: str) -> bool:
    return bool(_SECRET_NAME.match(name)) and not _TEMPLATE.search(name)


def find_unsafe(untracked: list[str], tracked_dirs: set[str] | frozenset[str] = frozenset()) -> list[UnsafeEntry]:
    """Secrets are listed one by one; bulk is grouped by its directory. `tracked_dirs` (git.tracked_dirs):
    a directory that holds tracked files is the person's, never bulk (a tracked `tests/`, `vendor/` or
    `build/`); new files in it are grouped by the outermost new directory below it."""
    entries: list[UnsafeEntry] = []
    bulk: Counter[str] = Counter()
    tops: Counter[str] = Counter()
    for path in untracked:
        parts = PurePosixPath(path).parts
        for depth, part in enumerate(parts[:-1]):
            directory = "/".join(parts[: depth + 1])
            if (part in BULK_DIRS or part.endswith(".egg-info")) and directory not in tracked_dirs:
                bulk[directory + "/"] += 1
                break
        else:
            new = next((depth for depth in range(len(parts) - 1) if "/".join(parts[: depth + 1]) not in tracked_dirs), None)
            if new is not None:
                tops["/".join(parts[: new + 1]) + "/"] += 1
            if _is_secret(parts[-1]):
                entries.append(UnsafeEntry(path, "secret"))
    # a directory holding a virtualenv marker is bulk even under an unusual name
    for path in untracked:
        parts = PurePosixPath(path).parts
        if parts[-1] == "pyvenv.cfg" and len(parts) > 1:
            directory = "/".join(parts[:-1]) + "/"
            if directory[:-1] not in tracked_dirs and not any(directory.startswith(b) for b in bulk):
                bulk[directory] = sum(1 for p in untracked if p.startswith(directory))
    for top, count in tops.items():
        if count >= BULK_FILE_COUNT and not any(top.startswith(b) or b.startswith(top) for b in bulk):
            bulk[top] = count
    entries += [UnsafeEntry(directory, "bulk", count) for directory, count in sorted(bulk.items())]
    return entries


def files_of(entries: list[UnsafeEntry], untracked: list[str]) -> list[str]:
    """The untracked files the entries stand for (a bulk entry: every one under its directory)."""
    names = {e.path for e in entries}
    dirs = tuple(name for name in names if name.endswith("/"))
    return [p for p in untracked if p in names or p.startswith(dirs)]


def describe(entries: list[UnsafeEntry], limit: int = 5) -> str:
    """A count and the top directories (or files): `203 files: tests/fixtures/ (200), .env, ...`."""
    total = sum(e.files for e in entries)
    ranked = sorted(entries, key=lambda e: (-e.files, e.path))
    shown = ", ".join(f"{e.path} ({e.files})" if e.why == "bulk" else e.path for e in ranked[:limit])
    return f"{total} file{'s' if total != 1 else ''}: {shown}" + (f", and {len(ranked) - limit} more" if len(ranked) > limit else "")


def _left_out_path(repo: Path) -> Path:
    from gtd.paths import project_state_dir

    return project_state_dir(repo) / LEFT_OUT_FILE


def remember_left_out(repo: Path, files: list[str]) -> None:
    """Note the untracked files a step left out of its commit (added to those noted before)."""
    if not files:
        return
    from gtd.config.writer import atomic_write

    known = left_out_earlier(repo)
    atomic_write(_left_out_path(repo), json.dumps(sorted(known | set(files))) + "\n")


def left_out_earlier(repo: Path) -> set[str]:
    """The files earlier steps left out (still untracked or not: a caller matches them against git's "??")."""
    try:
        names = json.loads(_left_out_path(repo).read_text(encoding="utf-8", errors="surrogateescape"))
    except (OSError, ValueError):
        return set()
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
