"""run_agent: events, forbidden-tool kill, timeouts, Ctrl-C, honest failure — against real processes."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gtd.providers.base import AgentOutcome, CommandSpec, Provider, SandboxNeeds
from gtd.providers.events import AgentEvent, EventKind
from gtd.providers.runner import run_agent
from provider_support import request_for

FAST = SimpleNamespace(inactivity_seconds=30, run_seconds=60)


class PythonProvider(Provider):
    """Runs a Python program that prints AgentEvent JSON lines: lets a test play any CLI behaviour."""

    name = "python"
    executable = sys.executable
    forbidden_tools = frozenset({"AskUserQuestion"})

    def __init__(self, program: str, stdin_data: bytes | None = None):
        self.program = textwrap.dedent(program)
        self.stdin_data = stdin_data

    def sandbox_needs(self) -> SandboxNeeds:
        return SandboxNeeds()

    def command(self, request):
        return CommandSpec([sys.executable, "-c", self.program], env={"PYTHONUNBUFFERED": "1"}, stdin_data=self.stdin_data)

    def parse_line(self, line):
        return [AgentEvent.from_dict(json.loads(line))] if line.startswith("{") else []

    def outcome(self, exit_code, events):
        return AgentOutcome(exit_code == 0, None if exit_code == 0 else None)


PRELUDE = """
import json, os, subprocess, sys, time
def emit(**e):
    print(json.dumps(e), flush=True)
"""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def wait_dead(pid: int) -> bool:
    for _ in range(100):
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def spawn_child(pidfile: Path) -> str:
    """Program text: start a long-lived grandchild in the same process group, record its pid."""
    return f"""
child = subprocess.Popen(["sleep", "300"])
open({str(pidfile)!r}, "w").write(str(child.pid))
"""


def test_events_in_order_and_on_event_sees_each(launcher, workdir):
    program = PRELUDE + """
emit(kind="start", session_id="s-1", tools=["shell"])
print("not json: ignored", flush=True)
emit(kind="tool_call", tool="shell", tool_id="1", tool_input={"command": "ls"})
emit(kind="tool_result", tool_id="1", text="ok")
emit(kind="end")
"""
    seen = []
    result = run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST, on_event=seen.append)
    assert result.ok and result.exit_code == 0 and result.stopped is None
    assert [e.kind for e in result.events] == [EventKind.START, EventKind.TOOL_CALL, EventKind.TOOL_RESULT, EventKind.END]
    assert seen == result.events
    assert result.session_id == "s-1"


def test_stdin_is_devnull_unless_data_given(launcher, workdir):
    program = PRELUDE + "emit(kind='text', text=repr(sys.stdin.read()))"
    closed = run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST)
    fed = run_agent(PythonProvider(program, stdin_data=b"the prompt"), request_for(workdir), launcher, timeouts=FAST)
    assert closed.text() == "''"
    assert fed.text() == "'the prompt'"


def test_forbidden_tool_kills_the_whole_group_at_once(launcher, workdir, tmp_path):
    pidfile, marker = tmp_path / "child.pid", tmp_path / "after"
    program = PRELUDE + spawn_child(pidfile) + f"""
emit(kind="start", session_id="s-2")
emit(kind="tool_call", tool="AskUserQuestion", tool_id="q", tool_input={{"question": "which?"}})
time.sleep(3)
open({str(marker)!r}, "w").write("the agent went on")
emit(kind="end")
"""
    result = run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST)
    assert result.stopped == "forbidden_tool" and result.forbidden_tool == "AskUserQuestion"
    assert not result.ok and "AskUserQuestion" in result.error
    assert result.events[-1].tool == "AskUserQuestion"
    assert result.session_id == "s-2"
    assert wait_dead(int(pidfile.read_text())), "the agent's child survived the kill"
    time.sleep(0.2)
    assert not marker.exists()


def test_inactivity_timeout_kills_group(launcher, workdir, tmp_path):
    pidfile = tmp_path / "child.pid"
    program = PRELUDE + spawn_child(pidfile) + "emit(kind='start')\ntime.sleep(300)"
    result = run_agent(PythonProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=0.5, run_seconds=60))
    assert result.stopped == "inactivity_timeout" and not result.ok
    assert "no output" in result.error
    assert wait_dead(int(pidfile.read_text()))


def test_stderr_output_counts_as_activity(launcher, workdir):
    # stdout silent for 1.5 s, but stderr talks every 0.1 s: no inactivity stop.
    program = PRELUDE + """
for _ in range(15):
    sys.stderr.write("working\\n"); sys.stderr.flush(); time.sleep(0.1)
emit(kind="end")
"""
    result = run_agent(PythonProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=0.8, run_seconds=60))
    assert result.stopped is None and result.ok
    assert "working" in result.stderr


class StderrRetryProvider(PythonProvider):
    """Reports a retry for each stderr line starting `RETRY ` (as opencode's error log does)."""

    def parse_stderr_line(self, line):
        return [AgentEvent(EventKind.RETRY, text=line[6:])] if line.startswith("RETRY ") else []


def test_stderr_lines_the_provider_reads_become_events_in_order(launcher, workdir):
    # A retry line written in two pieces, between stdout events; other stderr lines are only kept.
    program = PRELUDE + """
emit(kind="start", session_id="s-1")
time.sleep(0.5)
sys.stderr.write("log noise\\nRETRY API err"); sys.stderr.flush(); time.sleep(0.2)
sys.stderr.write("or 1\\nmore noise\\n"); sys.stderr.flush(); time.sleep(0.5)
emit(kind="end")
"""
    seen = []
    result = run_agent(StderrRetryProvider(program), request_for(workdir), launcher, timeouts=FAST,
                       on_event=seen.append)
    assert result.ok
    assert [(e.kind, e.text) for e in seen] == [(EventKind.START, None), (EventKind.RETRY, "API error 1"),
                                                 (EventKind.END, None)]
    assert "log noise" in result.stderr and "more noise" in result.stderr


def test_run_timeout_despite_steady_output(launcher, workdir, tmp_path):
    pidfile = tmp_path / "child.pid"
    program = PRELUDE + spawn_child(pidfile) + """
while True:
    emit(kind="text", text="still here"); time.sleep(0.1)
"""
    result = run_agent(PythonProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=5, run_seconds=1))
    assert result.stopped == "run_timeout" and "exceeded" in result.error
    assert len(result.events) >= 2
    assert wait_dead(int(pidfile.read_text()))


def test_keyboard_interrupt_kills_group_and_reraises(launcher, workdir, tmp_path):
    pidfile = tmp_path / "child.pid"
    program = PRELUDE + spawn_child(pidfile) + "emit(kind='start')\ntime.sleep(300)"

    def interrupt(event):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST, on_event=interrupt)
    assert launcher.started[-1].poll() is not None
    assert wait_dead(int(pidfile.read_text()))


def test_failure_reports_exit_status_and_stderr(launcher, workdir):
    program = PRELUDE + "sys.stderr.write('boom: no credentials\\n'); sys.exit(3)"
    result = run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST)
    assert not result.ok and result.exit_code == 3
    assert "status 3" in result.error and "boom: no credentials" in result.error


def test_leftover_background_children_do_not_outlive_the_run(launcher, workdir, tmp_path):
    pidfile = tmp_path / "child.pid"
    # The child keeps no pipe open (stdout to /dev/null), the agent exits normally.
    program = PRELUDE + f"""
child = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open({str(pidfile)!r}, "w").write(str(child.pid))
emit(kind="end")
"""
    result = run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST)
    assert result.ok
    assert wait_dead(int(pidfile.read_text()))


def test_exited_agent_with_child_holding_stdout_still_finishes(launcher, workdir, tmp_path):
    pidfile = tmp_path / "child.pid"
    program = PRELUDE + spawn_child(pidfile) + "emit(kind='end')"  # the child inherits stdout
    result = run_agent(PythonProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=30, run_seconds=60))
    assert result.ok and result.stopped is None
    assert wait_dead(int(pidfile.read_text()))


def test_a_line_without_end_is_not_read_whole(launcher, workdir, monkeypatch):
    # Any process in the sandbox can write to the CLI's stdout pipe (/proc/<cli pid>/fd/1, same user):
    # an endless line took gtd's memory (outside the sandbox's limits) while readline waited for its end.
    import tracemalloc

    from gtd.providers import runner

    monkeypatch.setattr(runner, "MAX_EVENT_LINE", 1 << 20, raising=False)
    program = PRELUDE + """
emit(kind="start")
subprocess.run(["sh", "-c", "head -c 60000000 /dev/zero > /proc/$PPID/fd/1; echo > /proc/$PPID/fd/1"])
emit(kind="end")
"""
    tracemalloc.start()
    try:
        result = run_agent(PythonProvider(program), request_for(workdir), launcher, timeouts=FAST)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and [e.kind for e in result.events] == [EventKind.START, EventKind.END]
    assert peak < 20_000_000, peak
