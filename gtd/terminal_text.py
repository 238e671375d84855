"""Text gtd did not write itself, made safe for the person's terminal.

The agent controls tool inputs and outputs, file names, reasons, error text and what lands in
the audit log. Printed raw, an escape sequence in any of them talks to the terminal: OSC 52
writes the clipboard, cursor moves hide lines, a carriage return or a bidi override rewrites
what a line seems to say, and rich markup (`[link=...]`, `[bold]`) restyles it. So:

- `visible(text)` turns every C0/C1 control character (except newline and tab), DEL and the
  bidi controls into a visible escape (`\\x1b`, `\\u202e`): the person sees that something was there;
- `markup(text)` is `visible` plus rich markup escaping, for interpolation into a markup string;
- every console gtd prints through is a `SafeConsole`, whose last step makes any control
  character left in the text visible (gtd's own styling and cursor codes are not text, and pass).
"""

from __future__ import annotations

import re
import sys
from typing import Any

# C0 (but \t and \n), DEL, C1, and the Unicode bidi/direction controls (Trojan-Source style reordering).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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
    return (_UNSAFE_ONE_LINE if one_line else _UNSAFE).sub(_escape_char, str(text))


def markup(text: Any, *, one_line: bool = False) -> str:
    """`text` safe to put inside a rich markup string: no control characters, no markup of its own."""
    from rich.markup import escape  # here, not at the top: `gtd --help` must not pay for importing rich

    return escape(visible(text, one_line=one_line))


def has_unsafe(text: str) -> bool:
    return _UNSAFE.search(text) is not None


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


def write(text: str, *, stream=None) -> None:
    """Plain (unstyled) text to stdout or `stream`, control characters made visible."""
    out = stream or sys.stdout
    out.write(visible(text))
    out.flush()
