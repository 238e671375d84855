"""Markers (TODO:, FIXME:, FIX:, HACK:, XXX:) a plan has absorbed are removed from the code.

The plan cites each marker it takes over as `path:line`; gtd then removes that marker comment
from the code (the whole line when it holds nothing else), so the note lives in one place only and
the plan still says where it was. The plan is the agent's, so this text surgery on the host is
bounded (issue 22):
- a protected path (the sandbox's list: hooks, rc files, agent and gtd config, ...) is never rewritten;
- a marker is cut only from a comment of the file's language (comments.py), and a line whose comment
  gtd cannot place is left as it is;
- a file is touched only when its bytes are still HEAD's, the step's start: one someone else changed
  in this step (the agent, the person meanwhile) is left alone, and gtd edits exactly the bytes it checked.
"""

from __future__ import annotations

import re
from pathlib import Path

from gtd import workspace_files
from gtd.workflow import git
from gtd.workflow.comments import comments
from gtd.workflow.steps import MARKER_RE, marker_lines


def strip_marker(line: str, comment: tuple[int, int | None] | None) -> str | None:
    """The line without its marker comment (`comment`: where it starts and ends on the line, None: gtd
    cannot place one); None when nothing else is on it; unchanged when the marker is not in that comment,
    or the comment is followed by code (code is never cut)."""
    if comment is None:
        return line
    start, end = comment
    body = line.rstrip("\r\n")
    if MARKER_RE.search(body, start, len(body) if end is None else end) is None:
        return line
    if end is not None and body[end:].strip():
        return line
    before = body[:start]
    if not before.strip():
        return None
    return before.rstrip() + line[len(body):]


def cited(todo_text: str, path: str, number: int) -> bool:
    return re.search(rf"(?<![\w./-]){re.escape(path)}:{number}(?!\d)", todo_text) is not None


def remove_absorbed(repo: Path, todo_text: str, *, search: git.Running | None = None,
                    left: dict[str, str] | None = None) -> list[str]:
    """Remove the markers TODO.md cites by `path:line` (found by `search`, a marker_search started
    earlier, when given). Returns `path:line` of each one removed; `left` (when given) gets each cited
    file gtd would not touch, with why."""
    from gtd.sandbox.protected import protected_in_work_tree

    by_file: dict[str, list[int]] = {}
    for entry in marker_lines(repo, limit=1000, search=search):
        path, _, rest = entry.partition(":")
        number, _, _text = rest.partition(":")
        if number.isdigit() and cited(todo_text, path, int(number)):
            by_file.setdefault(path, []).append(int(number))
    left = {} if left is None else left
    removed = []
    for path, numbers in by_file.items():
        if protected_in_work_tree(repo, path):
            left[path] = "a protected path: gtd never rewrites it"
            continue
        try:
            data = workspace_files.read_bytes(repo, path)
            text = None if data is None else data.decode("utf-8")
        except (OSError, workspace_files.UnsafeWorkspacePath, UnicodeDecodeError):
            continue  # (not UTF-8: rewriting it would replace its other bytes)
        if text is None:
            continue
        if data != git.blob_at_head(repo, path):
            left[path] = "changed since the step started: gtd leaves it to whoever changed it"
            continue
        places = comments(path, text)
        lines = re.findall(r"[^\n]*\n|[^\n]+$", text)  # git's lines: split at \n only (not at \f, \v, \x1c...)
        before = len(removed)
        for number in sorted(numbers, reverse=True):
            if number > len(lines):
                continue
            kept = strip_marker(lines[number - 1], places.get(number))
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
