"""Inactivity is judged fairly: a tool call in progress and a person's thinking time are not a hung agent."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from gtd.providers.runner import ActivityClock, run_agent
from provider_support import request_for
from test_provider_runner import PRELUDE, PythonProvider

SILENT_TOOL = PRELUDE + """
emit(kind="start")
emit(kind="tool_call", tool="Bash", tool_id="t1", tool_input={"command": "make test"})
time.sleep(2.0)  # the build runs silently, longer than the inactivity limit
emit(kind="tool_result", tool_id="t1", text="ok")
emit(kind="end")
"""


def test_a_silent_tool_call_is_not_inactivity(launcher, workdir):
    result = run_agent(PythonProvider(SILENT_TOOL), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=0.6, tool_seconds=30, run_seconds=60))
    assert result.stopped is None and result.ok, result.error


def test_a_tool_call_is_bounded_by_tool_seconds_and_the_message_names_it(launcher, workdir):
    result = run_agent(PythonProvider(SILENT_TOOL), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=30, tool_seconds=0.6, run_seconds=60))
    assert result.stopped == "tool_timeout" and not result.ok
    assert result.running == "the tool call `Bash: make test` was running"
    assert "`Bash: make test`" in result.error


def test_silence_between_tool_calls_is_inactivity_and_says_so(launcher, workdir):
    program = PRELUDE + """
emit(kind="start")
emit(kind="tool_call", tool="Bash", tool_id="t1", tool_input={"command": "ls"})
emit(kind="tool_result", tool_id="t1", text="ok")
time.sleep(30)
"""
    result = run_agent(PythonProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=0.6, tool_seconds=30, run_seconds=60))
    assert result.stopped == "inactivity_timeout"
    assert "no tool call was running" in result.error


def test_waiting_for_a_person_never_counts(launcher, workdir):
    """A question held on screen (as the proxy does while the agent waits for a connection) longer
    than both the inactivity limit and the hard cap: the agent is not stopped."""
    program = PRELUDE + """
emit(kind="start")
time.sleep(2.5)
emit(kind="end")
"""
    clock = ActivityClock()
    asked = threading.Event()

    def person() -> None:
        with clock.person_waiting():
            asked.set()
            time.sleep(2.3)  # the person reads the question

    thread = threading.Thread(target=person)

    def on_event(event) -> None:
        if event.kind.value == "start":
            thread.start()
            asked.wait()

    result = run_agent(PythonProvider(program), request_for(workdir), launcher, on_event=on_event, clock=clock,
                       timeouts=SimpleNamespace(inactivity_seconds=1.0, tool_seconds=1.0, run_seconds=1.5))
    thread.join()
    assert result.stopped is None and result.ok, result.error


class SilentToolProvider(PythonProvider):
    """A CLI like opencode: a tool's event comes only once the tool has ended (issue 24)."""

    announces_tool_start = False


def test_an_unannounced_tool_still_running_is_not_inactivity(launcher, workdir):
    program = PRELUDE + """
time.sleep(0.6)  # the CLI starts up (opencode: seconds)
emit(kind="start")
subprocess.run(["sleep", "2.5"])  # the tool runs; the CLI says nothing until it ends
emit(kind="tool_call", tool="bash", tool_id="t1", tool_input={"command": "sleep 2.5"})
emit(kind="tool_result", tool_id="t1", text="")
emit(kind="end")
"""
    result = run_agent(SilentToolProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=0.8, tool_seconds=30, run_seconds=60))
    assert result.stopped is None and result.ok, result.error


def test_an_unannounced_tool_is_bounded_by_tool_seconds_and_named(launcher, workdir):
    program = PRELUDE + """
time.sleep(0.6)  # the CLI starts up
emit(kind="start")
subprocess.run(["sh", "-c", "sleep 30; echo late"])
"""
    result = run_agent(SilentToolProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=1.0, tool_seconds=2.0, run_seconds=60))
    assert result.stopped == "tool_timeout", result.error
    assert result.running == "a tool was running (`sleep 30; echo late`)"
    assert result.seconds < 10


def test_a_process_left_by_an_earlier_step_is_no_tool_at_work(launcher, workdir):
    """A server an earlier step left in the background does not keep a silent (hung) agent alive."""
    program = PRELUDE + """
emit(kind="start")
subprocess.Popen(["sleep", "60"])  # left running by a tool of the first step
time.sleep(0.1)
emit(kind="tool_call", tool="bash", tool_id="t1", tool_input={"command": "server &"})
emit(kind="tool_result", tool_id="t1", text="")
emit(kind="start")  # the next step: the model never answers
time.sleep(30)
"""
    result = run_agent(SilentToolProvider(program), request_for(workdir), launcher,
                       timeouts=SimpleNamespace(inactivity_seconds=0.8, tool_seconds=30, run_seconds=60))
    assert result.stopped == "inactivity_timeout" and "no tool call was running" in result.error


def test_an_unannounced_tool_is_told_while_it_runs_and_its_end_gives_the_cli_a_full_interval(launcher, workdir):
    """The live view hears the command of a tool opencode has not announced (after a few silent seconds),
    and that it is over; the CLI then has a whole inactivity interval to say so (it was silent 4 s)."""
    program = PRELUDE + """
time.sleep(0.6)
emit(kind="start")
subprocess.run(["sh", "-c", "sleep 6.5; true"])
time.sleep(0.5)  # the CLI writes the tool's event a moment after the tool ended
emit(kind="tool_call", tool="bash", tool_id="t1", tool_input={"command": "sleep 6.5; true"})
emit(kind="tool_result", tool_id="t1", text="")
emit(kind="end")
"""
    heard = []
    result = run_agent(SilentToolProvider(program), request_for(workdir), launcher, on_unannounced=heard.append,
                       timeouts=SimpleNamespace(inactivity_seconds=4.0, tool_seconds=30, run_seconds=60))
    assert result.stopped is None and result.ok, result.error
    assert heard == ["sleep 6.5; true", None]
