"""Lines printed without rich (terminal_text.plain_markup, markup's fast path) are exactly what rich prints."""

from __future__ import annotations

import io

import pytest
from rich.markup import escape

from gtd.terminal_text import SafeConsole, markup, plain_markup

# gtd's own progress lines (as a plan and a build print them), and text that must be left to rich.
LINES = [
    "[dim]00:00[/dim] committed 371f6277e6 💬 feedback: seed",
    "[dim]00:00[/dim]     A  TODO.md",
    "[dim]00:01[/dim] [green]✓ plan[/green] 1 item(s) in TODO.md",
    "[dim]00:01[/dim] [dim]plan: 36 in / 21 out tokens · $0.0000[/dim]",
    "[bold]summary[/bold] (ok, 00:01, 36 in / 21 out tokens · $0.0000)\n  committed 371f6277e6 💬 feedback: seed",
    "[dim]00:01[/dim] running tests: [bold]cat hello.txt[/bold]",
    "[dim]00:00[/dim] [bold cyan]build[/bold cyan] Create hello.txt (level readwrite, provider pi)",
    "[magenta]calling[/magenta] a tool",
    "[yellow]warning:[/yellow] something [red]bad[/red] happened",
    "[bold][green]nested[/bold] unclosed green",
    "[bold]closed by [/] the short tag",
    "a very long line " * 20,
    "  leading and trailing spaces   ",
    "",
    "line one\n\nline three\n",
    "wide 漢字 and emoji 🔨 and combining e\u0301",
    "one colon: fine, two: colons: with spaces",
]
LEFT_TO_RICH = [
    "a [ ] checkbox", "[link=https://example.com]x[/link]", "[/green] closes nothing", "[unknownstyle]x", "[bold unknown]x", "[bold  cyan]x",
    "escaped \\[bold] bracket", "tab\there", ":smile: code", "a:b:c", "[]", "bell \x07 and esc \x1b[31m",
]


def rich_prints(text: str, columns: int | None = None, monkeypatch=None) -> str:
    if columns is not None:
        monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    SafeConsole(file=out, highlight=False, soft_wrap=True).print(text, highlight=False)
    return out.getvalue()


@pytest.mark.parametrize("text", LINES)
@pytest.mark.parametrize("columns", [None, 20, 200])
def test_plain_markup_is_what_rich_prints(text, columns, monkeypatch):
    plain = plain_markup(text)
    assert plain is not None
    assert plain + "\n" == rich_prints(text, columns, monkeypatch)


@pytest.mark.parametrize("text", LEFT_TO_RICH)
def test_anything_else_is_left_to_rich(text):
    assert plain_markup(text) is None


@pytest.mark.parametrize("text", ["plain", "a [b] c", "[bold]x", "ends with \\", "two \\\\", "a\\[b]", "x]y", "\x1b[1m",
                                  "café", "[ not a tag", "path/with:colon"])
def test_markup_escapes_as_rich_does(text):
    from gtd.terminal_text import visible

    assert markup(text) == escape(visible(text))
