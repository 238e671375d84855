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


_prepared = False


def prepare_in_background() -> None:
    """Load mdformat and let it compile its patterns (about 100 ms, its first call) on a background
    thread: started while the agent runs, so formatting TODO.md afterwards takes milliseconds."""
    global _prepared
    if _prepared:
        return
    _prepared = True
    import threading

    threading.Thread(target=_prepare, daemon=True, name="gtd-mdformat-prepare").start()


def _prepare() -> None:
    try:
        import mdformat

        mdformat.text("# Plan\n\n- [ ] item &amp; `code`\n")
    except Exception:  # noqa: BLE001 - only a head start; normalized() reports nothing either
        pass


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


__all__ = ["TODO_FILE", "normalize_todo", "normalized", "prepare_in_background"]
