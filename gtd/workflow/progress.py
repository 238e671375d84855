"""What a person sees while the agent works: phase, each tool call as it happens, elapsed time.

Line-based on purpose: a live-redrawing display would fight with escalation prompts that
may appear at any moment (the proxy asks while holding a connection).
"""

from __future__ import annotations

import json
import time

from rich.console import Console

from gtd.providers.events import AgentEvent, EventKind
from gtd.terminal_text import markup

_MAX_INPUT_CHARS = 100


class Progress:
    def __init__(self, console: Console, verbosity: int = 0):
        self.console = console
        self.verbosity = verbosity  # -1 quiet, 0 normal, 1 verbose
        self.started = time.monotonic()

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"[dim]{seconds // 60:02d}:{seconds % 60:02d}[/dim]"

    def phase(self, name: str, detail: str = "") -> None:
        if self.verbosity >= 0:
            self.console.print(f"{self._elapsed()} [bold cyan]{markup(name)}[/bold cyan] {markup(detail)}")

    def info(self, text: str) -> None:
        """`text` is gtd's own markup: anything it quotes must already be `terminal_text.markup()`ed."""
        if self.verbosity >= 0:
            self.console.print(f"{self._elapsed()} {text}")

    def warn(self, text: str) -> None:
        self.console.print(f"{self._elapsed()} [yellow]{markup(text)}[/yellow]")

    def event(self, event: AgentEvent) -> None:
        if self.verbosity < 0:
            return
        if event.kind == EventKind.TOOL_CALL:
            shown = _summarize(event.tool_input)
            self.console.print(f"{self._elapsed()}   [magenta]{markup(event.tool or '?', one_line=True)}[/magenta] {markup(shown, one_line=True)}")
        elif event.kind == EventKind.TOOL_RESULT and event.is_error:
            first = (event.text or "").strip().splitlines()[:1]
            self.console.print(f"{self._elapsed()}   [red]✗ {markup(first[0] if first else 'tool failed', one_line=True)}[/red]")
        elif event.kind == EventKind.TEXT and self.verbosity > 0 and event.text:
            self.console.print(f"{self._elapsed()}   [dim]{markup(event.text.strip()[:500])}[/dim]")
        elif event.kind == EventKind.ERROR:
            self.console.print(f"{self._elapsed()}   [red]agent error: {markup(event.text or '')}[/red]")


def _summarize(tool_input: dict | None) -> str:
    if not tool_input:
        return ""
    for key in ("command", "cmd", "path", "file_path", "filePath", "url", "pattern"):
        if key in tool_input:
            text = str(tool_input[key])
            break
    else:
        text = json.dumps(tool_input, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_INPUT_CHARS else text[: _MAX_INPUT_CHARS - 1] + "…"
