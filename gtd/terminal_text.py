"""Text gtd did not write itself, made safe for the person's terminal.

The agent controls tool inputs and outputs, file names, reasons, error text and what lands in
the audit log. Printed raw, an escape sequence in any of them talks to the terminal: OSC 52
writes the clipboard, cursor moves hide lines, a carriage return or a bidi override rewrites
what a line seems to say, and rich markup (`[link=...]`, `[bold]`) restyles it. So:

- `visible(text)` turns every C0/C1 control character (except newline and tab), DEL and the
  bidi controls into a visible escape (`\\x1b`, `\\u202e`): the person sees that something was there;
- `markup(text)` is `visible` plus rich markup escaping, for interpolation into a markup string;
- every console gtd prints through is a `SafeConsole`, whose last step makes any control
  character left in the text visible (gtd's own styling and cursor codes are not text, and pass);
- the few commands that print without rich (to start fast) write through `write_styled()`, which
  makes every segment's text visible and adds only gtd's own styles;
- a line for a stream rich would not style (no terminal) is written as `plain_markup()` renders it,
  when that provably equals rich's output (its text made visible the same way), else by rich.
"""

from __future__ import annotations

import functools
import os
import re
import sys

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any, Iterable

# C0 (but \t and \n), DEL, C1, the Unicode bidi/direction controls (Trojan-Source style reordering),
# and lone surrogates: a name that is not UTF-8, as Python reads it (surrogateescape), which printing
# would turn back into its raw bytes (0x9b is CSI on an 8-bit terminal) or into an encoding error.
# Compiled at first use (~1 ms; `gtd sandbox run` usually prints nothing of its own).
@functools.cache
def _unsafe(one_line: bool = False) -> re.Pattern:
    if one_line:  # also the Unicode line and paragraph separators, which rich breaks a line at
        return re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
    return re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape_char(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: Any, *, one_line: bool = False) -> str:
    """`text` with control characters shown as escapes; `one_line` also escapes newlines and tabs."""
    return _unsafe(one_line).sub(_escape_char, str(text))


def markup(text: Any, *, one_line: bool = False) -> str:
    """`text` safe to put inside a rich markup string: no control characters, no markup of its own."""
    shown = visible(text, one_line=one_line)
    if "[" not in shown and not shown.endswith("\\"):
        return shown  # rich's escape changes only `[` and a trailing backslash: no need to import rich
    from rich.markup import escape  # here, not at the top: `gtd --help` must not pay for importing rich

    return escape(shown)


_PLAIN_STYLES = frozenset({"bold", "dim", "italic", "b", "i", "red", "green", "yellow", "blue", "cyan", "magenta"})
_STYLE_TAG = re.compile(r"\[(/?)((?:[a-z]+(?: [a-z]+)*)?)\]")
_EMOJI_CODE = re.compile(r":\S*?:")  # what rich may read as an emoji code (`:smile:`)


def plain_markup(text: str) -> str | None:
    """What a rich console that styles nothing prints for this markup string (without the line end),
    worked out without rich for the markup gtd's own lines use: plain style tags (`[green]`, `[bold cyan]`,
    `[/green]`, `[/]`), dropped. None for anything else (a backslash, a tab, any other bracket, an unmatched closing
    tag, text rich may read as an emoji code): rich prints those (tests/terminal/test_plain_markup.py)."""
    if "\\" in text or "\t" in text:
        return None
    tags = list(_STYLE_TAG.finditer(text))
    if len(tags) != text.count("["):
        return None
    opened: list[str] = []
    for tag in tags:
        closing, name = tag.groups()
        if not closing:
            if not name or not _PLAIN_STYLES.issuperset(name.split(" ")):
                return None
            opened.append(name)
        elif not name:
            if not opened:
                return None
            opened.pop()
        elif name in opened:
            del opened[len(opened) - 1 - opened[::-1].index(name)]
        else:
            return None
    plain = _STYLE_TAG.sub("", text)
    return None if _EMOJI_CODE.search(plain) else visible(plain)


def no_terminal(stream) -> bool:
    """Whether rich, whatever its version, takes `stream` for no terminal and styles nothing on it:
    not a TTY, and none of the variables that tell rich otherwise (TTY_COMPATIBLE, FORCE_COLOR,
    TTY_INTERACTIVE) is set. Unsure is False."""
    if any(os.environ.get(name) is not None for name in ("TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE")):
        return False
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):
        return False


def has_unsafe(text: str) -> bool:
    return _unsafe().search(text) is not None


def _safe_console_class():
    """Defined on first use, so importing this module (every command does) does not import rich."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        """A rich Console whose text can never carry a terminal control sequence.

        Rich's own styling and cursor movement (Live) are rendered from styles and control segments,
        which pass untouched; only the characters of the text are made visible. This is the net under
        `markup()`/`visible()` at the call sites (which also keep rich's layout width exact)."""

        def _render_buffer(self, buffer):  # noqa: D401 - rich's hook, the one place all output passes
            return super()._render_buffer(
                segment if segment.control or not has_unsafe(segment.text) else
                Segment(visible(segment.text), segment.style, segment.control)
                for segment in buffer)

        def print_json(self, json: str | None = None, *, data: Any = None, **kwargs: Any) -> None:
            """JSON stays pure ASCII on the terminal (a C1 character is written as \\u009b, never raw)."""
            kwargs.setdefault("ensure_ascii", True)
            super().print_json(json, data=data, **kwargs)

    return SafeConsole


def __getattr__(name: str) -> Any:
    if name == "SafeConsole":
        cls = _safe_console_class()
        globals()["SafeConsole"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_SGR = {"bold": "1", "dim": "2", "red": "31", "yellow": "33"}
_COLOURS = ("red", "yellow")


def styles_reach(stream) -> bool:
    """Whether styling is sent to `stream`, decided as rich decides it for gtd's consoles
    (TTY_COMPATIBLE, FORCE_COLOR, a terminal that is not TERM=dumb), so a command that prints
    without rich looks like the others."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        terminal = compatible == "1"
    elif os.environ.get("FORCE_COLOR") is not None:
        terminal = os.environ["FORCE_COLOR"] != ""
    else:
        try:
            terminal = stream.isatty()
        except (AttributeError, ValueError):
            terminal = False
    return terminal and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")


def styled(segments: Iterable[tuple[str, str | None]], *, stream) -> str:
    """Text in gtd's own styles, without rich (for the commands that must start fast): each
    segment's text made visible, its style sent only when styling reaches `stream`; NO_COLOR drops
    the colours and keeps bold and dim, as rich does."""
    reach = styles_reach(stream)
    colours = reach and os.environ.get("NO_COLOR", "") == ""
    out = []
    for text, style in segments:
        text = visible(text)
        if style is not None and reach and (colours or style not in _COLOURS):
            text = f"\x1b[{_SGR[style]}m{text}\x1b[0m"
        out.append(text)
    return "".join(out)


def write_styled(segments: Iterable[tuple[str, str | None]], *, stream=None) -> None:
    """`styled(segments)` written to stdout or `stream`."""
    out = stream or sys.stdout
    out.write(styled(segments, stream=out))
    out.flush()


def write(text: str, *, stream=None) -> None:
    """Plain (unstyled) text to stdout or `stream`, control characters made visible."""
    out = stream or sys.stdout
    out.write(visible(text))
    out.flush()
