"""TODO.md is normalised with mdformat whenever gtd commits it, so diffs stay small and reviewable
(the original gtd ran prettier for the same reason). Formatting never changes what the plan says."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from gtd.workflow import format_helper
from gtd.workflow.todo import TODO_FILE, parse_todo, read_todo_text, write_todo


class CharacterReferences:
    """What mdformat's character-reference pattern matches (`&#123;`, `&#x1F;`, `&amp;`: text mdformat must
    escape), found without compiling its alternation of all 2,125 HTML5 entity names, which costs about 90 ms
    on the first format of every gtd process. An entity name is alphanumeric, so `&NAME;` matches exactly
    when NAME is one of them: the same matches and the same replacements (tests/workflow/test_markdown.py)."""

    _CANDIDATE = re.compile(r"&(?:#[0-9]{1,7}|#[Xx][0-9A-Fa-f]{1,6}|([A-Za-z0-9]+));")

    def __init__(self) -> None:
        import html.entities

        self.names = frozenset(name.rstrip(";") for name in html.entities.html5)

    def sub(self, repl: str, string: str, count: int = 0) -> str:
        # A rejected candidate holds no `&`, so no match of the full pattern starts inside it.
        def replace(match: re.Match) -> str:
            name = match.group(1)
            return match.expand(repl) if name is None or name in self.names else match.group(0)

        return self._CANDIDATE.sub(replace, string, count) if "&" in string else string


def _mdformat():
    """mdformat, its character-reference pattern swapped for CharacterReferences (mdformat looks the
    pattern up through `re_char_reference()` on each call; left alone if a version has no such hook)."""
    import mdformat
    from mdformat.renderer import _context

    if callable(getattr(_context, "re_char_reference", None)) and not getattr(_context, "_gtd_references", None):
        references = CharacterReferences()
        _context.re_char_reference = lambda: references
        _context._gtd_references = references
    return mdformat


def _warmed():
    """mdformat with its patterns compiled (its first call compiles them)."""
    mdformat = _mdformat()
    mdformat.text("# Plan\n\n- [ ] item &amp; `code`\n")
    return mdformat


def normalized(text: str) -> str:
    """The text as mdformat writes it (by the helper process when one runs: format_helper); the text
    unchanged if formatting would change the plan's items."""
    try:
        formatted = format_helper.format_text(text)
    except format_helper.FormatFailed:
        return text
    if formatted is None:
        mdformat = _mdformat()
        try:
            formatted = mdformat.text(text)
        except Exception:  # noqa: BLE001 - a formatter bug must never lose the person's plan
            return text
    before, after = parse_todo(text), parse_todo(formatted)
    same = _items(before) == _items(after)
    return formatted if same and _words(before.title) == _words(after.title) else text


def _words(text: str | None) -> str | None:
    """Text with runs of whitespace as one space: in Markdown prose they render the same, and mdformat
    collapses them (`that   multiplies` is the same item as `that multiplies`)."""
    return None if text is None else " ".join(text.split())


def _items(todo) -> list[tuple]:
    return [(_words(i.text), i.done, i.package and _words(i.package)) for i in todo.items]


_prepared = False


def prepare_in_background() -> None:
    """Load mdformat (about 60 ms of CPU, its imports and first call) beside this process's work, so
    formatting TODO.md later takes milliseconds: in a forked helper process where that is safe (a
    process with one thread, on Linux: format_helper), else on a background thread."""
    global _prepared
    if _prepared or "mdformat" in sys.modules:  # loaded here already (bare `gtd` formatted the person's edits)
        return
    _prepared = True
    if format_helper.start(_warmed):
        return
    import threading

    threading.Thread(target=_prepare, daemon=True, name="gtd-mdformat-prepare").start()


def _prepare() -> None:
    try:
        _warmed()
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
