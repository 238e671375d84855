"""Markers (TODO:, FIXME:, FIX:, HACK:, XXX:) a plan has absorbed are removed from the code.

The plan cites each marker it takes over as `path:line`; gtd then removes that marker comment
from the code (the whole line when it holds nothing else), so the note lives in one place only and
the plan still says where it was.
"""

from __future__ import annotations

import re
from pathlib import Path

from gtd import workspace_files
from gtd.workflow import git
from gtd.workflow.steps import MARKER_RE, marker_lines

_COMMENT = re.compile(r"(#|//|--|;|/\*|<!--|\*)")


def strip_marker(line: str) -> str | None:
    """The line without its marker comment; None when nothing else is on it; unchanged when the marker
    is not in a comment gtd recognises (code is never cut)."""
    match = MARKER_RE.search(line)
    if match is None:
        return line
    tokens = list(_COMMENT.finditer(line, 0, match.start()))
    if not tokens:
        return line
    start = tokens[0].start()
    before = line[:start]
    if not before.strip():
        return None
    return before.rstrip() + ("\n" if line.endswith("\n") else "")


def cited(todo_text: str, path: str, number: int) -> bool:
    return re.search(rf"(?<![\w./-]){re.escape(path)}:{number}(?!\d)", todo_text) is not None


def remove_absorbed(repo: Path, todo_text: str, *, search: git.Running | None = None) -> list[str]:
    """Remove the markers TODO.md cites by `path:line` (found by `search`, a marker_search started
    earlier, when given). Returns `path:line` of each one removed."""
    by_file: dict[str, list[int]] = {}
    for entry in marker_lines(repo, limit=1000, search=search):
        path, _, rest = entry.partition(":")
        number, _, _text = rest.partition(":")
        if number.isdigit() and cited(todo_text, path, int(number)):
            by_file.setdefault(path, []).append(int(number))
    removed = []
    for path, numbers in by_file.items():
        try:
            text = workspace_files.read_text(repo, path, errors="strict")
        except (OSError, workspace_files.UnsafeWorkspacePath, UnicodeDecodeError):
            continue  # (not UTF-8: rewriting it would replace its other bytes)
        if text is None:
            continue
        lines = re.findall(r"[^\n]*\n|[^\n]+$", text)  # git's lines: split at \n only (not at \f, \v, \x1c...)
        before = len(removed)
        for number in sorted(numbers, reverse=True):
            if number > len(lines):
                continue
            kept = strip_marker(lines[number - 1])
            if kept == lines[number - 1]:
                continue
            if kept is None:
                del lines[number - 1]
            else:
                lines[number - 1] = kept
            removed.append(f"{path}:{number}")
        if len(removed) > before:  # a file with nothing cut is left alone, not rewritten
            workspace_files.write_text(repo, path, "".join(lines))
    return sorted(removed)
