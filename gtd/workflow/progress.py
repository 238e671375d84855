"""What a person sees while the agent works: phase, each tool call as it happens, elapsed time.

Line-based on purpose: a live-redrawing display would fight with escalation prompts that
may appear at any moment (the proxy asks while holding a connection).
"""

from __future__ import annotations

import json
import time

from rich.console import Console
from rich.markup import escape

from gtd.providers.events import AgentEvent, EventKind

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
            self.console.print(f"{self._elapsed()} [bold cyan]{escape(name)}[/bold cyan] {escape(detail)}")

    def info(self, text: str) -> None:
        if self.verbosity >= 0:
            self.console.print(f"{self._elapsed()} {text}")

    def warn(self, text: str) -> None:
        self.console.print(f"{self._elapsed()} [yellow]{escape(text)}[/yellow]")

    def event(self, event: AgentEvent) -> None:
        if self.verbosity < 0:
            return
        if event.kind == EventKind.TOOL_CALL:
            shown = _summarize(event.tool_input)
            self.console.print(f"{self._elapsed()}   [magenta]{escape(event.tool or '?')}[/magenta] {escape(shown)}")
        elif event.kind == EventKind.TOOL_RESULT and event.is_error:
            first = (event.text or "").strip().splitlines()[:1]
            self.console.print(f"{self._elapsed()}   [red]✗ {escape(first[0] if first else 'tool failed')}[/red]")
        elif event.kind == EventKind.TEXT and self.verbosity > 0 and event.text:
            self.console.print(f"{self._elapsed()}   [dim]{escape(event.text.strip()[:500])}[/dim]")
        elif event.kind == EventKind.ERROR:
            self.console.print(f"{self._elapsed()}   [red]agent error: {escape(event.text or '')}[/red]")


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
