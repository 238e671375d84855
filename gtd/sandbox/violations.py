"""Find the paths a sandboxed command was refused writing, from the text of its tool results.

The kernel reports a denied write as EROFS ("Read-only file system"), EACCES ("Permission
denied"), EBUSY (renaming/removing a protected mount point) or EXDEV (hard link across the
boundary). Shells, coreutils, git, Python and Node each phrase it differently; these patterns
cover the common ones. Pure function: the workflow feeds it tool results and records violations.
"""

from __future__ import annotations

import re

_ERRORS = r"(?:Read-only file system|read-only file system|Permission denied|permission denied|Device or resource busy|Invalid cross-device link)"
_Q = "['\"\u2018\u2019\u201c\u201d`]"

_PATTERNS = [
    # Node/Bun: "EROFS: read-only file system, open '/x/y'"
    re.compile(r"E(?:ROFS|ACCES|PERM|BUSY|XDEV): [^,\n]*, \w+ " + _Q + r"(?P<p>[^'\"\n]+)" + _Q),
    # Python: "[Errno 30] Read-only file system: '/x/y'"
    re.compile(r"\[Errno (?:30|13|16|18)\] [^:\n]+: " + _Q + r"(?P<p>[^'\"\n]+)" + _Q),
    # coreutils: "touch: cannot touch '/x': Read-only file system", "mv: cannot move 'a' to 'b': ..."
    re.compile(r"cannot (?:move|rename) " + _Q + r"[^'\"\n]+" + _Q + r" to " + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r": " + _ERRORS),
    re.compile(r"cannot (?:move|rename) " + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r"(?: to [^:\n]+)?: " + _ERRORS),
    re.compile(r"failed to create (?:hard |symbolic )?link " + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r"[^:\n]*: " + _ERRORS),
    re.compile(r"(?:cannot|can't|could not|unable to|failed to) [\w -]*?" + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r": " + _ERRORS),
    # git: "fatal: Unable to create '/r/.git/index.lock': Read-only file system."
    re.compile(r"[Uu]nable to [\w ]+" + _Q + r"(?P<p>[^'\"\n]+)" + _Q + r": " + _ERRORS),
    # git: "error: could not lock config file .git/config: Read-only file system"
    re.compile(r"could not (?:lock|write|open) [\w ]*?file (?P<p>\S+): " + _ERRORS),
    # sh/dash: "sh: 1: cannot create /x: Read-only file system"
    re.compile(r"\d+: cannot create (?P<p>[^'\"\s:][^:\n]*): " + _ERRORS),
    # bash: "bash: /x/y: Read-only file system", "bash: line 1: /x: Permission denied"
    re.compile(r"(?:^|\n)\s*[\w./-]*sh: (?:line \d+: )?(?P<p>[^:\n ]+): " + _ERRORS),
    # generic "open /x: read-only file system" (Go)
    re.compile(r"\b(?:open|mkdir|remove|rename|symlink|link|unlink) (?P<p>/[^:\n ]+): " + _ERRORS),
]


def denied_write_paths(text: str) -> list[str]:
    """Every path the text reports a refused write for, in order of first appearance, without duplicates."""
    hits: list[tuple[int, str]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(text or ""):
            hits.append((m.start("p"), m.group("p").strip()))
    seen: dict[str, None] = {}
    for _, path in sorted(hits):
        if path and path not in seen:
            seen[path] = None
    return list(seen)
