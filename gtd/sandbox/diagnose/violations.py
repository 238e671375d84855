"""Find the paths a sandboxed command was refused writing, from the text of its tool results.

The kernel reports a denied write as EROFS ("Read-only file system"), EACCES ("Permission
denied"), EBUSY (renaming/removing a protected mount point) or EXDEV (hard link across the
boundary). Shells, coreutils, git, Python and Node each phrase it differently; these patterns
cover the common ones. The workflow feeds it tool results and records violations.

A command that goes on after a refused write (`touch ~/.x; echo done`) exits 0: its output is
read too (`refused_writes`), and a path counts only when the policy itself refuses it, so a
"Permission denied" of the file's own mode, or text that merely quotes such an error, is not
reported as the sandbox's.
"""

from __future__ import annotations

import functools
import re

_ERRORS = r"(?:Read-only file system|read-only file system|Permission denied|permission denied|Device or resource busy|Invalid cross-device link)"
_Q = "['\"\u2018\u2019\u201c\u201d`]"


@functools.cache
def _patterns() -> list[re.Pattern]:
    """Compiled at first use (~15 ms): importing this module for `mentions_refusal` costs nothing."""
    return [re.compile(p) for p in _SOURCES]


_SOURCES = [
    # Node/Bun: "EROFS: read-only file system, open '/x/y'"
    (r"E(?:ROFS|ACCES|PERM|BUSY|XDEV): [^,\n]*, \w+ " + _Q + r"(?P<p>[^'\"\n]+)" + _Q),
    # Python: "[Errno 30] Read-only file system: '/x/y'"
    (r"\[Errno (?:30|13|16|18)\] [^:\n]+: " + _Q + r"(?P<p>[^'\"\n]+)" + _Q),
    # coreutils: "touch: cannot touch '/x': Read-only file system", "mv: cannot move 'a' to 'b': ..."
    (r"cannot (?:move|rename) " + _Q + r"[^'\"\n]+" + _Q + r" to " + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r": " + _ERRORS),
    (r"cannot (?:move|rename) " + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r"(?: to [^:\n]+)?: " + _ERRORS),
    (r"failed to create (?:hard |symbolic )?link " + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r"[^:\n]*: " + _ERRORS),
    (r"(?:cannot|can't|could not|unable to|failed to) [\w -]*?" + _Q + r"(?P<p>[^'\"\n\u2019]+)" + _Q + r": " + _ERRORS),
    # git: "fatal: Unable to create '/r/.git/index.lock': Read-only file system."
    (r"[Uu]nable to [\w ]+" + _Q + r"(?P<p>[^'\"\n]+)" + _Q + r": " + _ERRORS),
    # git: "error: could not lock config file .git/config: Read-only file system"
    (r"could not (?:lock|write|open) [\w ]*?file (?P<p>\S+): " + _ERRORS),
    # sh/dash: "sh: 1: cannot create /x: Read-only file system"
    (r"\d+: cannot create (?P<p>[^'\"\s:][^:\n]*): " + _ERRORS),
    # bash: "bash: /x/y: Read-only file system", "bash: line 1: /x: Permission denied"
    (r"(?:^|\n)\s*[\w./-]*sh: (?:line \d+: )?(?P<p>[^:\n ]+): " + _ERRORS),
    # generic "open /x: read-only file system" (Go)
    (r"\b(?:open|mkdir|remove|rename|symlink|link|unlink) (?P<p>/[^:\n ]+): " + _ERRORS),
]


def denied_write_paths(text: str) -> list[str]:
    """Every path the text reports a refused write for, in order of first appearance, without duplicates."""
    hits: list[tuple[int, str]] = []
    for pattern in _patterns():
        for m in pattern.finditer(text or ""):
            hits.append((m.start("p"), m.group("p").strip()))
    seen: dict[str, None] = {}
    for _, path in sorted(hits):
        if path and path not in seen:
            seen[path] = None
    return list(seen)


_MENTIONS = ("ead-only file system", "ermission denied", "resource busy", "cross-device link", "EROFS", "EACCES",
             "EPERM", "EBUSY", "EXDEV")


def mentions_refusal(text: str) -> bool:
    """A cheap first look (no pattern compiled): could the text report a refused write at all?"""
    return any(word in text for word in _MENTIONS)


def refused_writes(text: str, policy, cwd) -> list[tuple[str, str, str]]:
    """(path as the text spells it, the absolute path, why the policy refuses it) for each write the text
    reports refused that the policy indeed refuses, in order of first appearance."""
    if not text or not mentions_refusal(text):
        return []
    import os
    from pathlib import Path

    from gtd.sandbox.diagnose.why import why_path

    out = []
    for raw in denied_write_paths(text):
        path = Path(raw) if Path(raw).is_absolute() else Path(cwd) / raw
        verdict = why_path(policy, Path(os.path.normpath(path)))
        if not verdict.allowed:
            out.append((raw, verdict.target, verdict.reason))
    return out
