"""TODO.md is normalised with mdformat whenever gtd commits it, so diffs stay small and reviewable
(the original gtd ran prettier for the same reason). Formatting never changes what the plan says."""

from __future__ import annotations

from pathlib import Path

from gtd.workflow.todo import TODO_FILE, parse_todo, read_todo_text, write_todo


def normalized(text: str) -> str:
    """The text as mdformat writes it; the text unchanged if formatting would change the plan's items."""
    import mdformat

    try:
        formatted = mdformat.text(text)
    except Exception:  # noqa: BLE001 - a formatter bug must never lose the person's plan
        return text
    before, after = parse_todo(text), parse_todo(formatted)
    same = [(i.text, i.done, i.package) for i in before.items] == [(i.text, i.done, i.package) for i in after.items]
    return formatted if same and before.title == after.title else text


def normalize_todo(repo: Path) -> bool:
    """Format TODO.md in place. Returns whether it changed."""
    text = read_todo_text(repo)
    if text is None:
        return False
    formatted = normalized(text)
    if formatted == text:
        return False
    write_todo(repo, formatted)
    return True


__all__ = ["TODO_FILE", "normalize_todo", "normalized"]
