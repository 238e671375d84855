"""Untracked files gtd must never sweep into a commit of the person's edits: secrets and bulk.

A `.env` with a key, a private key, or a 1,500-file virtualenv that is not in .gitignore is
almost never meant for history. gtd stops and lists them; the person ignores or adds them.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

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
BULK_FILE_COUNT = 200  # this many new files under one new top-level directory is bulk whatever its name


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


def find_unsafe(untracked: list[str]) -> list[UnsafeEntry]:
    """Secrets are listed one by one; bulk is grouped by its directory."""
    entries: list[UnsafeEntry] = []
    bulk: Counter[str] = Counter()
    tops: Counter[str] = Counter()
    for path in untracked:
        parts = PurePosixPath(path).parts
        for depth, part in enumerate(parts[:-1]):
            if part in BULK_DIRS or part.endswith(".egg-info"):
                bulk["/".join(parts[: depth + 1]) + "/"] += 1
                break
        else:
            if len(parts) > 1:
                tops[parts[0] + "/"] += 1
            if _is_secret(parts[-1]):
                entries.append(UnsafeEntry(path, "secret"))
    # a directory holding a virtualenv marker is bulk even under an unusual name
    for path in untracked:
        parts = PurePosixPath(path).parts
        if parts[-1] == "pyvenv.cfg" and len(parts) > 1:
            directory = "/".join(parts[:-1]) + "/"
            if not any(directory.startswith(b) for b in bulk):
                bulk[directory] = sum(1 for p in untracked if p.startswith(directory))
    for top, count in tops.items():
        if count >= BULK_FILE_COUNT and not any(top.startswith(b) or b.startswith(top) for b in bulk):
            bulk[top] = count
    entries += [UnsafeEntry(directory, "bulk", count) for directory, count in sorted(bulk.items())]
    return entries
