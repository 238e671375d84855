"""Run one agent CLI for one request: the same loop, guards and timeouts for every provider.

The provider only describes argv/env and parses lines; this module starts the CLI through a
launcher (the sandbox session, or a direct launcher in tests), watches its stream and stops
its whole process group at once when it calls a forbidden tool, goes silent for too long,
runs past the hard cap, or the user presses Ctrl-C. Headless never hangs.

Silence is judged fairly: time a person spends answering an approval question never counts
(neither as inactivity nor toward the hard cap), and while a tool call is in progress (a long,
silent build) the agent is not inactive: the tool is bounded by `timeouts.toolSeconds` instead.
A CLI that announces a tool only once it has ended (opencode) is judged by its process tree: a live
process its current step started is a tool in progress (providers/proctree.py).
"""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections import deque
from contextlib import contextmanager

from gtd.providers.base import AgentRequest, Provider
from gtd.providers.events import AgentEvent, EventKind, call_detail
from gtd.record import record

STDERR_LIMIT = 64 * 1024  # bytes of stderr kept (the tail): enough to explain a failure
# The longest stdout line read as one event. Any process in the sandbox can write to the CLI's stdout
# pipe (/proc/<its pid>/fd/1, same user): a line without end must not grow gtd's memory without bound.
# Claude's largest lines (a tool result holding an image) stay far below this.
MAX_EVENT_LINE = 32 * 1024 * 1024
NOISE_LINES = 20  # non-event stdout lines kept for the error message
READER_JOIN_SECONDS = 2.0
UNANNOUNCED_AFTER = 5.0  # seconds of silence before the process tree is looked at for an unannounced tool
EXIT_GRACE_SECONDS = 2.0  # after the CLI exits, how long its leftovers may keep stdout open  # after the kill, how long to wait for the pipes to drain

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:  # names for annotations only
    from typing import IO, Callable, Literal, Protocol, Sequence

    Stopped = Literal[None, "forbidden_tool", "inactivity_timeout", "tool_timeout", "run_timeout", "interrupted"]

    class ProcessLauncher(Protocol):
        """Starts a command in its own process group (start_new_session): the sandbox session implements it."""

        def popen(self, argv: Sequence[str], *, cwd, env: dict | None = None, stdin=None, stdout=None,
                  stderr=None) -> subprocess.Popen: ...

    class TimeoutSettings(Protocol):
        inactivity_seconds: float
        run_seconds: float
        # tool_seconds: float -- optional; a tool call in progress may stay silent this long (default: run_seconds)


# The setting a person raises for each kind of stop (as spelled in the config files).
TIMEOUT_SETTINGS = {"inactivity_timeout": "timeouts.inactivitySeconds", "tool_timeout": "timeouts.toolSeconds",
                    "run_timeout": "timeouts.runSeconds"}


@record
class AgentResult:
    ok: bool
    events: list[AgentEvent]
    session_id: str | None
    error: str | None
    exit_code: int | None
    stopped: Stopped = None
    forbidden_tool: str | None = None
    stderr: str = ""  # the tail of the CLI's stderr, for diagnostics
    running: str | None = None  # a timeout: what was running when it struck ("the tool call Bash: npm test")
    seconds: float = 0.0  # from starting the CLI (its sandbox included) until it was reaped

    def text(self) -> str:
        """All assistant text of the run, in order."""
        return "\n".join(e.text for e in self.events if e.kind == EventKind.TEXT and e.text)


def process_group(proc: subprocess.Popen) -> int | None:
    """The command's own process group id, or None if the launcher did not give it one."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return None
    return pgid if pgid == proc.pid and pgid != os.getpgrp() else None


def kill_process_group(proc: subprocess.Popen, pgid: int | None) -> None:
    """SIGKILL the command's whole process group (also after the leader exited: its children remain)."""
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass
    if proc.poll() is None:
        try:
            proc.kill()
        except OSError:
            pass


class ActivityClock:
    """When the agent last showed a sign of life, with the time a person spends answering left out.

    Any output on stdout or stderr is a sign of life. `person_waiting()` holds the clock while a
    question is on screen (the proxy asks from its own thread while the agent runs): silence then
    is the person's, not the agent's, and it is also left out of the run's hard cap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._holds = 0
        self._held_since = 0.0
        self._held_total = 0.0

    def touch(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    @contextmanager
    def person_waiting(self):
        with self._lock:
            if self._holds == 0:
                self._held_since = time.monotonic()
            self._holds += 1
        try:
            yield
        finally:
            with self._lock:
                self._holds -= 1
                now = time.monotonic()
                if self._holds == 0:
                    self._held_total += now - self._held_since
                self._last = now  # the agent gets a full interval after the answer

    def idle(self, now: float) -> float:
        """Seconds of silence that count against the agent (0 while a person is being asked)."""
        with self._lock:
            return 0.0 if self._holds else now - self._last

    def held(self, now: float) -> float:
        """Total seconds spent waiting for a person so far."""
        with self._lock:
            return self._held_total + (now - self._held_since if self._holds else 0.0)


def _read_stdout(pipe: IO[bytes], lines: "queue.Queue[bytes | None]", activity: ActivityClock) -> None:
    """Lines to the queue; one longer than MAX_EVENT_LINE is dropped (read in pieces, never whole)."""
    try:
        overlong = False
        for line in iter(lambda: pipe.readline(MAX_EVENT_LINE), b""):
            activity.touch()
            if len(line) == MAX_EVENT_LINE and not line.endswith(b"\n"):
                overlong = True  # the next piece carries on the same line
            elif overlong:
                overlong = False  # its last piece
            else:
                lines.put(line)
    except (OSError, ValueError):
        pass
    finally:
        lines.put(None)


class OutputTail:
    """The last `limit` bytes of a stream, kept in the chunks they came in, and how many came before."""

    def __init__(self, limit: int):
        self.limit = limit
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.dropped = 0

    def append(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.size > self.limit and len(self.chunks) > 1:
            gone = len(self.chunks.popleft())
            self.size -= gone
            self.dropped += gone

    def bytes(self) -> bytes:
        return b"".join(self.chunks)


def _read_stderr(pipe: IO[bytes], tail: OutputTail, activity: ActivityClock,
                 lines: "queue.Queue[bytes | AgentEvent | None]", parse: Callable[[str], list[AgentEvent]]) -> None:
    """Keeps the tail of stderr for the error message; events the provider finds in a stderr line
    (`parse_stderr_line`) join the stdout stream's queue, so they reach `on_event` in order."""
    partial = b""
    try:
        while True:
            chunk = pipe.read1(4096) if hasattr(pipe, "read1") else pipe.read(4096)
            if not chunk:
                return
            activity.touch()
            tail.append(chunk)
            *complete, partial = (partial + chunk).split(b"\n")
            partial = partial[-STDERR_LIMIT:]  # a line without end is not read without bound
            for raw in complete:
                try:
                    found = parse(raw.decode("utf-8", "replace").strip())
                except Exception:  # noqa: BLE001 - a line we cannot read is not an event, never a crash
                    found = []
                for event in found:
                    lines.put(event)
    except (OSError, ValueError):
        pass


def _write_stdin(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def run_agent(
    provider: Provider,
    request: AgentRequest,
    launcher: ProcessLauncher,
    *,
    timeouts: TimeoutSettings,
    on_event: Callable[[AgentEvent], None] | None = None,
    clock: ActivityClock | None = None,
    on_unannounced: Callable[[str | None], None] | None = None,
) -> AgentResult:
    """Run the CLI to the end (or a stop). `clock`, when given, is the one the escalator holds while it
    asks a person (see ActivityClock); events go to `on_event` as they arrive. `on_unannounced` hears the
    command of a tool the CLI runs without having said so (opencode), once it has been silent a while,
    and None when that is over."""
    urls = getattr(launcher, "gateway_urls", None)
    if callable(urls) and urls():
        from gtd.record import replace

        request = replace(request, gateway=urls())
    spec = provider.command(request)
    launched = time.monotonic()
    proc = launcher.popen(
        spec.argv,
        cwd=request.cwd,
        env=spec.env,
        stdin=subprocess.PIPE if spec.stdin_data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pgid = process_group(proc)
    started = time.monotonic()
    activity = clock or ActivityClock()
    activity.touch()
    tool_seconds = float(getattr(timeouts, "tool_seconds", None) or timeouts.run_seconds)
    open_calls: dict[str, AgentEvent] = {}  # tool calls started and not finished, by id
    watch = None if provider.announces_tool_start else UnannouncedTool(proc.pid)
    shown: tuple[int, str] | None = None  # the unannounced tool `on_unannounced` was told about
    was_busy = False
    lines: queue.Queue[bytes | AgentEvent | None] = queue.Queue()  # stdout lines, stderr events
    stderr_tail = OutputTail(STDERR_LIMIT)
    threads = [
        threading.Thread(target=_read_stdout, args=(proc.stdout, lines, activity), daemon=True),
        threading.Thread(target=_read_stderr, args=(proc.stderr, stderr_tail, activity, lines, provider.parse_stderr_line),
                         daemon=True),
    ]
    if spec.stdin_data is not None:
        threads.append(threading.Thread(target=_write_stdin, args=(proc.stdin, spec.stdin_data), daemon=True))
    for t in threads:
        t.start()

    events: list[AgentEvent] = []
    noise: deque[str] = deque(maxlen=NOISE_LINES)
    stopped: Stopped = None
    forbidden: str | None = None
    stdout_open = True
    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            elapsed = now - started - activity.held(now)
            idle = activity.idle(now)
            inactivity = timeouts.inactivity_seconds or float("inf")  # 0: off
            busy = watch is not None and not open_calls and idle >= min(inactivity, UNANNOUNCED_AFTER) \
                and watch.running()
            if was_busy and not busy:  # the tool's end is a sign of life: the CLI gets a full interval to say so
                activity.touch()
                idle = 0.0
            was_busy = busy
            if on_unannounced is not None and watch is not None and (watch.found if busy else None) != shown:
                shown = watch.found if busy else None
                on_unannounced(shown[1] if shown else None)
            limit = tool_seconds if open_calls or busy else inactivity
            if elapsed >= timeouts.run_seconds:
                stopped = "run_timeout"
            elif idle >= limit:
                stopped = "tool_timeout" if open_calls or busy else "inactivity_timeout"
            if stopped:
                kill_process_group(proc, pgid)
                break
            wait = max(0.01, min(timeouts.run_seconds - elapsed, limit - idle, 0.5))
            if not stdout_open:
                if wait_exit(proc, wait):
                    break
                continue
            try:
                raw = lines.get(timeout=wait)
            except queue.Empty:
                if proc.poll() is not None:  # exited, but a leftover child holds stdout open
                    exited_at = exited_at or time.monotonic()
                    if time.monotonic() - exited_at >= EXIT_GRACE_SECONDS:
                        kill_process_group(proc, pgid)
                        stdout_open = False
                continue
            if raw is None:
                stdout_open = False
                continue
            if isinstance(raw, AgentEvent):  # found on stderr
                parsed = [raw]
            else:
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    parsed = provider.parse_line(line)
                except Exception:  # noqa: BLE001 - a line we cannot read is not an event, never a crash
                    parsed = []
                if not parsed:
                    noise.append(line[:500])
            if watch is not None:
                watch.line(any(e.kind == EventKind.START for e in parsed))
            for event in parsed:
                _track_tool_calls(open_calls, event)
                if event.kind == EventKind.TOOL_CALL and event.tool in provider.forbidden_tools:
                    kill_process_group(proc, pgid)  # at once, before anyone else looks at the event
                    stopped, forbidden = "forbidden_tool", event.tool
                events.append(event)
                if on_event is not None:
                    on_event(event)
                if stopped:
                    break
            if stopped:
                break
    except BaseException:  # KeyboardInterrupt above all: nothing the agent started may outlive gtd
        kill_process_group(proc, pgid)
        _finish(proc, pgid, threads)
        raise

    _finish(proc, pgid, threads)
    seconds = time.monotonic() - launched
    kill_process_group(proc, pgid)  # leftovers in the group (background shells) do not outlive the run
    stderr_text = stderr_tail.bytes().decode("utf-8", "replace")
    exit_code = proc.returncode
    if stopped:
        running = _running(open_calls, watch)
        reasons = {
            "forbidden_tool": f"the agent called the forbidden tool '{forbidden}' and was stopped",
            "inactivity_timeout": f"no output from {provider.name} for {timeouts.inactivity_seconds:g}s "
                                  f"while {running}; it was stopped",
            "tool_timeout": f"no output from {provider.name} for {tool_seconds:g}s while {running}; it was stopped",
            "run_timeout": f"the {provider.name} run exceeded {timeouts.run_seconds:g}s while {running}; "
                           "it was stopped",
        }
        session_id = next((e.session_id for e in events if e.session_id), None)
        return AgentResult(False, events, session_id, reasons.get(stopped, stopped), exit_code, stopped, forbidden,
                           stderr_text, running, seconds)

    outcome = provider.outcome(exit_code, events)
    session_id = outcome.session_id or next((e.session_id for e in events if e.session_id), None)
    error = outcome.error
    if not outcome.ok and not error:
        detail = stderr_text.strip()[-2000:] or "\n".join(noise)[-2000:]
        error = f"{provider.name} exited with status {exit_code}" + (f": {detail}" if detail else "")
    return AgentResult(outcome.ok, events, session_id, provider.explain_error(error), exit_code, None, None, stderr_text,
                       seconds=seconds)


def _track_tool_calls(open_calls: dict[str, AgentEvent], event: AgentEvent) -> None:
    """Tool calls in progress: a call opens, its result (same id) closes it; an END closes them all."""
    if event.kind == EventKind.TOOL_CALL:
        open_calls[event.tool_id or f"#{len(open_calls)}"] = event
    elif event.kind == EventKind.TOOL_RESULT:
        if event.tool_id in open_calls:
            del open_calls[event.tool_id]
        elif open_calls and not event.tool_id:
            open_calls.pop(next(iter(open_calls)))
    elif event.kind == EventKind.END:
        open_calls.clear()


def describe_call(event: AgentEvent, limit: int = 120) -> str:
    """`Bash: npm test` -- a tool call as one short line (the command, path or URL it was given)."""
    text = " ".join(f"{event.tool or 'tool'}: {call_detail(event.tool_input)}".split()).rstrip(":")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class UnannouncedTool:
    """A tool at work that the CLI has not announced: a live process of the agent's tree started since
    its current step began. A step's tools start after its START event, and whatever earlier steps
    left running started before the line that came just before it: that line's arrival is the mark
    (for the first step, shortly before its START, never within the CLI's own start-up)."""

    FIRST_STEP_MARGIN = 0.25  # seconds: a tool may start within the clock's tick of the START line

    def __init__(self, root: int) -> None:
        from gtd.providers.proctree import boot_clock

        self.root = root
        self.launched = boot_clock()
        self.last_line: float | None = None  # when the CLI's latest line arrived
        self.since: float | None = None  # None before the first step: no tool can run yet
        self.found: tuple[int, str] | None = None  # (pid, command line) seen last

    def line(self, starts_step: bool) -> None:
        """A line of the CLI's stream has arrived; `starts_step`: it held a START event."""
        from gtd.providers.proctree import boot_clock

        now = boot_clock()
        if starts_step:
            if self.last_line is not None:
                self.since = self.last_line
            else:
                self.since = max(now - self.FIRST_STEP_MARGIN, self.launched + self.FIRST_STEP_MARGIN)
            self.found = None
        self.last_line = now

    def running(self) -> bool:
        from gtd.providers.proctree import alive_since, started_since

        if self.since is None:
            return False
        if self.found is not None and alive_since(self.found[0], self.since):
            return True  # the same process still runs: no walk of /proc
        self.found = started_since(self.root, self.since)
        return self.found is not None


def _running(open_calls: dict[str, AgentEvent], watch: UnannouncedTool | None = None) -> str:
    """What was running when a timeout struck, for the message."""
    if not open_calls and watch is not None and watch.found is not None:
        return f"a tool was running (`{' '.join(watch.found[1].split())[:120]}`)"
    if not open_calls:
        return "no tool call was running (the model was thinking or waiting for its API)"
    return "the tool call " + ", ".join(f"`{describe_call(e)}`" for e in open_calls.values()) + " was running"


def wait_exit(proc: subprocess.Popen, timeout: float) -> bool:
    """Whether the process exited (and was reaped) within `timeout` seconds. Sleeps on a pidfd, woken
    by the exit itself; Popen.wait(timeout) instead polls with sleeps growing to 50 ms, which a short
    command's end waited out."""
    if proc.poll() is not None:
        return True
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux >= 5.3
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        select.select([pidfd], [], [], max(0.0, timeout))
    finally:
        os.close(pidfd)
    return proc.poll() is not None


def _finish(proc: subprocess.Popen, pgid: int | None, threads: list[threading.Thread]) -> None:
    """Reap the process and let the reader threads drain (bounded: an escaped child may hold a pipe)."""
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        kill_process_group(proc, pgid)
        proc.wait()
    deadline = time.monotonic() + READER_JOIN_SECONDS
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    for pipe in (proc.stdout, proc.stderr):
        try:
            if pipe is not None and not any(t.is_alive() for t in threads):
                pipe.close()
        except OSError:
            pass
