"""What a person (or a script) sees while gtd works.

Three views of the same happenings:
- on a terminal: lines for what happened (tool calls, refusals, commits) above a live status
  area -- phase, level, provider, item, elapsed time, spinner, tokens and cost, "Ctrl-C to stop",
  the running tool call or test command, and the last lines of its output;
- off a terminal: the same lines, plain (no colours, no cursor movement);
- `--json`: one JSON object per line on stdout, each with an "event" key (schema in docs/output.md).
A summary closes every run: commits, refusals, approvals, time, tokens and cost.

It learns about refusals, escalations, test runs and commits from the audit log's records (every
one of them is audited anyway), so the workflow code only says when a phase starts. Everything
the agent wrote is shown through gtd.terminal_text.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from contextlib import contextmanager

from gtd.providers.events import AgentEvent, EventKind, call_detail, token_counts
from gtd.record import field, record
from gtd.refusal_tally import RefusalTally, repeats_line
from gtd.terminal_text import markup, visible
from gtd.workflow.backend_created import described

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:  # rich is imported for the live view only: plain lines need none (cli/context.py LazyConsole)
    from typing import IO, Any, Callable

    from rich.console import Console, Group
    from rich.live import Live

TAIL_LINES = 5  # lines of a running command's output kept on screen
QUIET_SECONDS = 10  # after this long without a word from the agent (and no tool running), say so
_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60:02d}:{seconds % 60:02d}"


def _count(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@record
class Usage:
    """Tokens and cost as the CLIs report them (None when a CLI reports none)."""

    input: int = 0
    output: int = 0
    cost_usd: float | None = None
    reported: bool = False

    def add(self, event: AgentEvent) -> None:
        counts = token_counts(event.usage)
        if counts is not None:
            self.input += counts[0]
            self.output += counts[1]
            self.reported = True
        if isinstance(event.cost_usd, (int, float)):
            self.cost_usd = (self.cost_usd or 0.0) + float(event.cost_usd)
            self.reported = True

    def merge(self, other: "Usage") -> None:
        self.input += other.input
        self.output += other.output
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd
        self.reported = self.reported or other.reported

    def describe(self) -> str:
        if not self.reported:
            return ""
        text = f"{_count(self.input)} in / {_count(self.output)} out tokens"
        return text + (f" · ${self.cost_usd:.4f}" if self.cost_usd is not None else "")

    def to_dict(self) -> dict[str, Any]:
        tokens = {"input": self.input, "output": self.output}
        return {"tokens": tokens if self.reported else None, "cost_usd": self.cost_usd}


@record
class _Phase:
    name: str
    item: str | None
    started: float
    level: str | None = None
    provider: str | None = None
    usage: Usage = field(default_factory=Usage)
    committed: bool = False


class Progress:
    """One per gtd invocation. Thread-safe: the proxy reports refusals from its own threads."""

    def __init__(self, console: Console, verbosity: int = 0, *, live: bool | None = None,
                 events: IO[str] | None = None, describe_commit: Callable[[str], str] | None = None):
        self.console = console
        self.verbosity = verbosity  # -1 quiet, 0 normal, 1 verbose
        self.events = events  # --json: the JSONL stream (stdout)
        self.live_enabled = console.is_terminal and verbosity >= 0 if live is None else live
        self.describe_commit = describe_commit
        self.started = time.monotonic()
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._paused = 0
        self.phase_now: _Phase | None = None
        self.running: str | None = None  # the tool call or test command in progress
        self.running_since = 0.0
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.usage = Usage()
        self.commits: list[tuple[str, str]] = []  # (short hash, subject)
        self.refusals = RefusalTally()  # per target: a retried refusal is one line and a count
        self.repeating: tuple[str, int] | None = None  # the refusal being repeated now, and its count
        self.approvals: list[str] = []
        self.denials: list[str] = []
        self.left_out: list[str] = []  # what build steps left out of their commits (unsafe.describe)
        self.retrying: str | None = None
        self.last_heard = time.monotonic()  # the agent's last event
        self.finished = False
        self._last_render: Group | None = None

    # -- what the workflow says ---------------------------------------------------------------

    def phase(self, name: str, detail: str = "", *, item: str | None = None, level: str | None = None,
              provider: str | None = None) -> None:
        with self._lock:
            self._end_phase()
            self.phase_now = _Phase(name, item, time.monotonic(), level, provider)
            self.last_heard = time.monotonic()
            self.running, self.retrying = None, None
            self.tail.clear()
            self._emit("phase_start", phase=name, item=item, level=level, provider=provider)
            if self.verbosity >= 0:
                shown = " ".join(part for part in (markup(item) if item else "", markup(detail),
                                                   f"(level {markup(level)}, provider {markup(provider)})"
                                                   if level and provider else "") if part)
                self._line(f"[bold cyan]{markup(name)}[/bold cyan] {shown}".rstrip())
            self._start_live()

    def info(self, text: str) -> None:
        """`text` is gtd's own markup: anything it quotes must already be `terminal_text.markup()`ed."""
        if self.verbosity >= 0:
            self._line(text)

    def warn(self, text: str) -> None:
        self._emit("warning", text=text)
        self._line(f"[yellow]{markup(text)}[/yellow]")

    def output(self, line: str) -> None:
        """One line of the running command's output (the test run), for the live tail."""
        with self._lock:
            self.tail.append(_one_line(visible(line, one_line=True), 200))
        self._refresh()

    def running_command(self, description: str | None) -> None:
        """What runs now outside the agent (the test command); None when it is done."""
        with self._lock:
            self.running = description
            self.running_since = self.last_heard = time.monotonic()
            if description:
                self.tail.clear()
        self._refresh()

    def unannounced_tool(self, command: str | None) -> None:
        """A tool the agent's CLI runs without an event yet (opencode names it when it ends): shown as
        running, not as a silent agent; None when it is over."""
        with self._lock:
            if command:
                self.running, self.running_since = f"a tool: {command}", time.monotonic()
                self.tail.clear()
            elif self.running and self.running.startswith("a tool: "):
                self.running = None
        self._refresh()

    def committed(self, subject: str, sha: str, files: list[str], *, step: str | None = None) -> None:
        """Every commit gtd makes is shown with its files, so nothing lands in history unseen. `step`
        is given for commits no audited phase step reports (the person's 💬/🔧 edits)."""
        with self._lock:
            if step is not None:
                self._commit(sha, step=step)
            if self.verbosity < 0:
                return
            self._line(f"[green]committed[/green] {markup(sha[:10])} {markup(subject, one_line=True)}")
            shown = files[:20]
            for line in shown:
                self._line(f"    {markup(line.replace(chr(9), '  '), one_line=True)}")
            if len(files) > len(shown):
                self._line(f"    … and {len(files) - len(shown)} more file(s)")

    def event(self, event: AgentEvent) -> None:
        """One event of the agent's stream."""
        with self._lock:
            self.last_heard = time.monotonic()
            phase = self.phase_now.name if self.phase_now else None
            if event.kind == EventKind.TOOL_CALL:
                from gtd.providers.runner import describe_call

                self.running, self.running_since, self.retrying = describe_call(event), time.monotonic(), None
                self.tail.clear()
                self._emit("tool_call", phase=phase, tool=event.tool, id=event.tool_id, input=_summarize(event.tool_input))
                if self.verbosity >= 0:
                    self._line(f"  [magenta]{markup(event.tool or '?', one_line=True)}[/magenta] "
                               f"{markup(_summarize(event.tool_input), one_line=True)}")
            elif event.kind == EventKind.TOOL_RESULT:
                self.running = None
                lines = [visible(line, one_line=True) for line in (event.text or "").strip().splitlines()]
                self.tail.clear()
                self.tail.extend(_one_line(line, 200) for line in lines[-TAIL_LINES:])
                self._emit("tool_result", phase=phase, tool=event.tool, id=event.tool_id, is_error=event.is_error)
                if event.is_error and self.verbosity >= 0:
                    first = (event.text or "").strip().splitlines()[:1]
                    self._line(f"  [red]✗ {markup(first[0] if first else 'tool failed', one_line=True)}[/red]")
            elif event.kind == EventKind.TEXT and event.text:
                self.retrying = None
                if self.verbosity > 0:
                    self._line(f"  [dim]{markup(event.text.strip()[:500])}[/dim]")
            elif event.kind == EventKind.RETRY:
                self.retrying = event.text or "API error, retrying"
                self._emit("api_retry", phase=phase, text=event.text, source="cli")
                if self.verbosity >= 0:
                    self._line(f"  [yellow]{markup(event.text or 'API error, retrying', one_line=True)}[/yellow]")
            elif event.kind in (EventKind.END, EventKind.USAGE):  # every request's usage, summed
                if self.phase_now is not None:
                    self.phase_now.usage.add(event)
                self.usage.add(event)
            elif event.kind == EventKind.ERROR:
                self._emit("agent_error", phase=phase, text=event.text)
                self._line(f"  [red]agent error: {markup(event.text or '')}[/red]")
        self._refresh()

    # -- what the audit log records -----------------------------------------------------------

    def audited(self, entry: dict) -> None:
        """Listener on AuditLog.record: refusals, escalations, tests, commits become events and summary lines."""
        kind = entry.get("event")
        with self._lock:
            phase = entry.get("phase")
            if kind == "agent_run" and self.phase_now is not None:
                self.phase_now.level = entry.get("level") or self.phase_now.level
                self.phase_now.provider = entry.get("provider") or self.phase_now.provider
            elif kind == "escalation_request":
                self._emit("escalation", phase=phase, id=entry.get("id"), kind=entry.get("kind"),
                           target=entry.get("target"), level=entry.get("level"), reason=entry.get("reason"))
            elif kind == "escalation_decision":
                if entry.get("raised_level") and self.phase_now is not None:  # "run this phase at network"
                    self.phase_now.level = entry["raised_level"]
                (self.denials if entry.get("decision") == "deny" else self.approvals).append(described(entry))
                self._emit("decision", id=entry.get("id"), target=entry.get("target"), decision=entry.get("decision"),
                           decided_by=entry.get("decided_by"), commit=entry.get("commit"), model=entry.get("model"),
                           reason=entry.get("reason"), created_by_gtd=entry.get("created_by_gtd"))
                if entry.get("commit"):
                    self._commit(entry["commit"])
                if entry.get("decided_by") == "reviewer" and self.verbosity >= 0:
                    verb = "denied" if entry.get("decision") == "deny" else "allowed"
                    self._line(f"{markup(str(entry.get('target')))} {verb} by reviewer: "
                               f"{markup(str(entry.get('reason') or ''), one_line=True)}")
                elif entry.get("created_by_gtd") and self.verbosity >= 0:  # the agent is resumed; nobody was asked
                    self._line(markup(described(entry), one_line=True))
            elif kind == "reviewer_fallback":
                self._emit("reviewer_fallback", id=entry.get("id"), target=entry.get("target"), reason=entry.get("reason"))
                self._line(f"[yellow]reviewer gave no verdict on {markup(str(entry.get('target')))} "
                           f"({markup(str(entry.get('reason')), one_line=True)}): decided as under `prompt`[/yellow]")
            elif kind == "test_run":
                if self.phase_now is not None and entry.get("level"):  # tests rerun at a level approved once
                    self.phase_now.level = entry["level"]
                self._emit("test_run", phase=phase, exit_code=entry.get("exit_code"),
                           passed=entry.get("exit_code") == 0)
            elif kind == "step":
                if entry.get("left_out"):
                    self.left_out.append(f"{entry.get('step')}: {entry['left_out']}")
                if self.phase_now is not None and self.phase_now.name == entry.get("step"):
                    self.phase_now.committed = True
                if entry.get("commit"):
                    self._commit(entry["commit"], step=entry.get("step"))

    def refused(self, kind: str, target: str, *, phase: str | None = None, level: str | None = None,
                detail: str | None = None) -> None:
        """The sandbox refused something: the first refusal of a target is a line at once, its repeats
        (a client retrying) are counted on the live status and said once when the phase ends."""
        what = f"{kind} {target}"
        count = self.refusals.add(what)
        with self._lock:
            self._emit("refusal", phase=phase, kind=kind, target=target, level=level, detail=detail or None,
                       count=count)
            if count == 1:
                self._emit("warning", text=f"sandbox refused {what}")
                self._line(f"[yellow]{markup(f'sandbox refused {what}', one_line=True)}[/yellow]")
            else:
                self.repeating = (what, count)
        self._refresh()

    def _say_repeats(self) -> None:
        self.repeating = None
        for what, repeats, total in self.refusals.unsaid_repeats():
            self._line(f"[yellow]{markup(repeats_line(what, repeats, total))}[/yellow]")

    def _commit(self, sha: str, step: str | None = None) -> None:
        subject = ""
        if self.describe_commit is not None:
            try:
                subject = self.describe_commit(sha)
            except Exception:  # noqa: BLE001 - the summary never fails the run
                subject = ""
        self.commits.append((sha[:10], subject))
        self._emit("commit", step=step, hash=sha, subject=subject or None)

    # -- the end ------------------------------------------------------------------------------

    def finish(self, status: str, exit_code: int, **extra: Any) -> None:
        """Close the live view, print the summary (stderr) and the run_end event (--json)."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
            self._end_phase()
            self._stop_live()
            self._say_repeats()
            seconds = time.monotonic() - self.started
            self._emit("run_end", status=status, exit_code=int(exit_code), seconds=round(seconds, 1),
                       commits=[{"hash": h, "subject": s} for h, s in self.commits], refusals=self.refusals.total,
                       approvals=len(self.approvals), denials=len(self.denials), **self.usage.to_dict(), **extra)
            if self.verbosity < 0 or (self.phase_now is None and not self.commits):
                return
            lines = [f"[bold]summary[/bold] ({markup(status)}, {_clock(seconds)}"
                     + (f", {markup(self.usage.describe())}" if self.usage.reported else "") + ")"]
            for short, subject in self.commits:
                lines.append(f"  committed {short} {markup(subject, one_line=True)}")
            if not self.commits:
                lines.append("  nothing committed")
            for left in self.left_out:
                lines.append(f"  left out of the commit, uncommitted (see `git status`): {markup(left, one_line=True)}")
            if self.refusals:
                lines.append(f"  refused by the sandbox: {self.refusals.total} "
                             f"({markup(_one_line('; '.join(self.refusals.entries()), 160))}) -- see `gtd audit`")
            for approval in self.approvals:
                lines.append(f"  approved: {markup(approval, one_line=True)}")
            for denial in self.denials:
                lines.append(f"  denied: {markup(denial, one_line=True)}")
            self.console.print("\n".join(lines), highlight=False)

    def _end_phase(self) -> None:
        phase = self.phase_now
        if phase is None:
            return
        self._say_repeats()
        self._emit("phase_end", phase=phase.name, committed=phase.committed,
                   seconds=round(time.monotonic() - phase.started, 1), **phase.usage.to_dict())
        if phase.usage.reported and self.verbosity >= 0:
            self._line(f"[dim]{markup(phase.name)}: {markup(phase.usage.describe())}[/dim]")
        self.phase_now = None

    # -- the screen ---------------------------------------------------------------------------

    @contextmanager
    def paused(self):
        """No live area while a question is on screen (its redraws would fight the prompt)."""
        with self._lock:
            self._paused += 1
            self._stop_live()
        try:
            yield
        finally:
            with self._lock:
                self._paused -= 1
                if self.phase_now is not None:
                    self._start_live()

    def _line(self, text: str) -> None:
        elapsed = f"[dim]{_clock(time.monotonic() - self.started)}[/dim]"
        self.console.print(f"{elapsed} {text}", highlight=False)

    def _emit(self, event: str, **fields: Any) -> None:
        if self.events is None:
            return
        record = {"event": event, "time": round(time.monotonic() - self.started, 3),
                  **{k: v for k, v in fields.items() if v is not None}}
        self.events.write(json.dumps(record, ensure_ascii=True, default=str) + "\n")
        self.events.flush()

    def _start_live(self) -> None:
        if not self.live_enabled or self._live is not None or self._paused or self.finished:
            return
        from rich.live import Live

        console = self.console.real() if hasattr(self.console, "real") else self.console  # a LazyConsole's
        self._live = Live(self, console=console, refresh_per_second=8, transient=True,
                          redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def _refresh(self) -> None:
        if (live := self._live) is not None:
            live.refresh()

    def __rich__(self) -> Group:
        """The live status area (redrawn by rich.Live from its own thread). Never waits for the lock:
        whoever holds it may be stopping the Live, which waits for this thread."""
        if not self._lock.acquire(blocking=False):
            from rich.console import Group

            return self._last_render or Group()
        try:
            self._last_render = self._render()
            return self._last_render
        finally:
            self._lock.release()

    def _status_line(self, now: float, width: int) -> Any:
        """Phase · level · provider · item · time · tokens · "Ctrl-C to stop" on one line of `width`:
        when it does not fit, the item is shortened first, then the tokens, then level and provider
        go; the phase, the time and how to stop always stay."""
        from rich.text import Text

        phase = self.phase_now
        level = visible(phase.level, one_line=True) if phase and phase.level else ""
        provider = visible(phase.provider, one_line=True) if phase and phase.provider else ""
        item = " ".join(visible(phase.item, one_line=True).split()) if phase and phase.item else ""
        usage = self.usage.describe() if self.usage.reported else ""
        head = _SPINNER[int(now * 10) % len(_SPINNER)] + " " + (phase.name if phase else "gtd")
        tail = " · " + _clock(now - self.started)
        stop = " · Ctrl-C to stop"

        def length(parts: list[str]) -> int:
            return len(head) + sum(3 + len(p) for p in parts if p) + len(tail) + len(stop)

        item = _one_line(item, 60) if item else ""
        room = width - 1 - length([level, provider, usage])  # what is left for the item (1: the cursor)
        if item and room < len(item) + 3:
            item = _one_line(item, room - 3) if room - 3 >= 12 else ""
        if length([level, provider, item, usage]) >= width and usage:
            usage = f"{_count(self.usage.input)}/{_count(self.usage.output)} tokens"
        if length([level, provider, item, usage]) >= width:
            level = provider = ""
        status = Text(no_wrap=True, overflow="ellipsis")
        status.append(head[:2], style="cyan")
        status.append(head[2:], style="bold cyan")
        for part in (level, provider, item):
            if part:
                status.append(" · " + part)
        status.append(tail)
        if usage:
            status.append(" · " + usage)
        status.append(stop, style="dim")
        return status

    def _render(self) -> Group:
        from rich.console import Group
        from rich.text import Text

        now = time.monotonic()
        phase = self.phase_now
        rows: list[Any] = [_FitWidth(lambda width: self._status_line(now, width))]
        if self.repeating:
            rows.append(Text(f"  ✗ refused {visible(self.repeating[0], one_line=True)} again "
                             f"({self.repeating[1]} in all)", style="yellow"))
        if self.retrying:
            rows.append(Text("  ↻ " + _one_line(visible(self.retrying, one_line=True)), style="yellow"))
        if self.running:
            rows.append(Text(f"  ▶ {_one_line(visible(self.running, one_line=True))} "
                             f"({_clock(now - self.running_since)})", style="magenta"))
        elif phase is not None and now - self.last_heard >= QUIET_SECONDS:
            # e.g. opencode backing off silently on HTTP 5xx: the screen says so instead of looking frozen
            rows.append(Text(f"  … waiting for {visible(phase.provider or 'the agent', one_line=True)}: no output for "
                             f"{int(now - self.last_heard)}s (the model is thinking, or its CLI is retrying the API; "
                             "gtd stops it after timeouts.inactivitySeconds)", style="yellow"))
        for line in self.tail:
            rows.append(Text("    │ " + line, style="dim", no_wrap=True, overflow="ellipsis"))
        return Group(*rows)

class _FitWidth:
    """A renderable made for the width it is given (rich passes it at render time)."""

    def __init__(self, make: Callable[[int], Any]):
        self.make = make

    def __rich_console__(self, console: Any, options: Any):
        yield self.make(options.max_width)


def _summarize(tool_input: dict | None) -> str:
    return _one_line(call_detail(tool_input) or json.dumps(tool_input, ensure_ascii=False), 100) if tool_input else ""

