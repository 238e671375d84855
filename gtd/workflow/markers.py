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

A marker the person added as feedback (a 💬, or the original's 🤦,
commit since the last plan) always moves into the plan, as in the original gtd: one the plan does
not cite becomes an action item citing it. Markers the code had before are left alone unless cited.
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


def feedback_marker_lines(repo: Path) -> set[tuple[str, str]]:
    """(path, line) of each marker line the person's feedback commits since the last plan added to the
    code (TODO.md aside)."""
    from gtd.workflow.steps import Step, step_of_subject
    from gtd.workflow.todo import TODO_FILE

    added: set[tuple[str, str]] = set()
    for sha, subject in git.log(repo, limit=50):
        step = step_of_subject(subject)
        if step in (Step.PLAN, Step.CLEANUP, Step.LEARN, Step.BUILD):
            break
        if step != Step.FEEDBACK:
            continue
        path = None
        for line in git.git(repo, "show", "--format=", "--no-color", "--no-renames", "-U0", sha, check=False).splitlines():
            if line.startswith("+++ "):
                path = line[6:] if line.startswith("+++ b/") else None
            elif line.startswith("+") and path and path != TODO_FILE and MARKER_RE.search(line):
                added.add((path, line[1:].rstrip()))
    return added


def carry_feedback_markers(repo: Path, todo_text: str, entries: list[str]) -> str:
    """TODO.md with an action item for each feedback marker (feedback_marker_lines) still in the code
    that the plan does not cite by `path:line`: the note moves into the plan, never lost."""
    feedback = feedback_marker_lines(repo)
    items = []
    for entry in entries:
        path, _, rest = entry.partition(":")
        number, _, text = rest.partition(":")
        if not number.isdigit() or (path, text.rstrip()) not in feedback or cited(todo_text, path, int(number)):
            continue
        note = text[MARKER_RE.search(text).end():].strip().rstrip("*/->").strip() or text.strip()
        items.append(f"- [ ] {note} (from `{path}:{number}`)\n  - Tests: as the note says\n")
    if not items:
        return todo_text
    lines = re.findall(r"[^\n]*\n|[^\n]+$", todo_text)
    heading = next((i for i, line in enumerate(lines) if line.lower().startswith("## action items")), None)
    if heading is None:
        return todo_text
    end = next((i for i in range(heading + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    while end > heading + 1 and not lines[end - 1].strip():
        end -= 1
    if end and not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    return "".join(lines[:end] + items + lines[end:])


def remove_absorbed(repo: Path, todo_text: str, *, search: git.Running | None = None,
                    entries: list[str] | None = None, left: dict[str, str] | None = None) -> list[str]:
    """Remove the markers TODO.md cites by `path:line` (found by `search`, a marker_search started
    earlier, or given as `entries`, marker_lines' output). Returns `path:line` of each one removed;
    `left` (when given) gets each cited file gtd would not touch, with why."""
    from gtd.sandbox.policy.protected import protected_in_work_tree

    by_file: dict[str, list[int]] = {}
    for entry in entries if entries is not None else marker_lines(repo, limit=1000, search=search):
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
