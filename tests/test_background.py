"""gtd.background.Background: an error in the background thread never vanishes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from gtd.background import Background


def _fail(message: str) -> None:
    raise ValueError(message)


def test_join_raises_what_the_function_raised_once():
    task = Background(_fail, "attach failed")
    with pytest.raises(ValueError, match="attach failed") as info:
        task.join()
    assert any(frame.name == "_fail" for frame in info.traceback)  # where it happened, not only where joined
    task.join()  # reported once: a second join (a `finally`) does not raise it again


def test_on_error_takes_the_error_instead_of_join():
    seen = []
    task = Background(_fail, "gateway failed", on_error=seen.append)
    task.join()
    assert [str(e) for e in seen] == ["gateway failed"]


def test_an_error_nobody_joins_is_reported_on_stderr_when_the_thread_ends():
    # A fire-and-forget task (the cgroup priming move): the error is reported as the Background is freed,
    # at the end of its thread, by Python's unraisable hook, not at exit.
    script = textwrap.dedent("""
        import sys, threading
        from gtd.background import Background
        reported = threading.Event()
        def hook(args, original=sys.unraisablehook):
            original(args)
            reported.set()
        sys.unraisablehook = hook
        def lost():
            raise ValueError("lost in the background")
        Background(lost)
        print("reported" if reported.wait(30) else "not reported while running")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout == "reported\n", result.stdout + result.stderr
    assert "Exception ignored in" in result.stderr and "ValueError: lost in the background" in result.stderr
    assert "in lost" in result.stderr, result.stderr  # with the traceback of the function that raised


def test_a_loop_knows_its_own_thread_which_must_not_join_itself():
    """FilteringProxy.stop_serving joins a listener's accept loop unless called from that loop itself."""
    seen, named = [], threading.Event()

    def loop():
        named.wait()  # `task` is assigned once Background() returned
        seen.append(task.running_here())

    task = Background(loop)
    named.set()
    task.join()
    assert seen == [True] and not task.running_here()


def test_report_puts_a_loops_error_on_stderr_as_threading_does(capsys):
    task = Background(_fail, "accept loop failed", on_error=Background.report)
    task.join()  # taken by on_error: join does not raise
    err = capsys.readouterr().err
    assert "ValueError: accept loop failed" in err and "_fail" in err
