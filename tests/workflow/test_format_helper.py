"""mdformat in a forked helper process (gtd.workflow.format_helper): the same output as mdformat in
gtd's own process, nothing of gtd's held by the helper, and every way the helper can fail answered by
formatting in process. Each case runs in a fresh interpreter: the helper is forked only by a process
with one thread, which pytest's need not be."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

from gtd.workflow import markdown

PLAN = ("# Plan &amp; more\n\n## Action items\n- [ ] Escape \\&lt;b\\&gt; and \\&#123; but not &bogus;\n"
        "  - Tests: `a &amp; b`\n* [x] done \\&notin; &notin; set — ünïcødé ✓\n\n## Open questions\n\n## Learnings\n")
FORMATS = "# Plan\n## Action items\n- [ ] one and two\n  - Tests: `x`\n## Open questions\n## Learnings\n"
TEXTS = [
    "", "<!-- goal -->\nmake a hello file\n", PLAN, FORMATS, PLAN.replace("\n", "\r\n"),
    "# Big\n\n## Action items\n" + "".join(f"- [ ] item {i} with *stars* and _under_ & more, and a few plain words\n"
                                         for i in range(1000)),
]


def run_python(code: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=stdin, capture_output=True, text=True,
                          timeout=60)


def test_the_helper_formats_exactly_as_mdformat_in_process():
    assert len(TEXTS[-1]) > 64 * 1024  # more than a pipe holds: the request and reply are written in parts
    result = run_python("""
        import json, os, sys
        from gtd.workflow import format_helper, markdown
        assert format_helper.start(markdown._warmed)
        pid = format_helper._helper[0]
        out = [format_helper.format_text(t) for t in json.load(sys.stdin)]
        print(json.dumps({"pid": pid, "self": os.getpid(), "out": out, "mdformat_here": "mdformat" in sys.modules}))
    """, stdin=json.dumps(TEXTS))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["pid"] != found["self"]
    assert not found["mdformat_here"]  # loaded by the helper only
    mdformat = markdown._mdformat()
    assert found["out"] == [mdformat.text(text) for text in TEXTS]


def test_the_helper_holds_only_its_pipes_and_dev_null():
    """A lock or pipe end gtd had open when it forked stays gtd's: the helper closed its copies."""
    result = run_python("""
        import fcntl, json, os, tempfile
        from gtd.workflow import format_helper, markdown
        lock, path = tempfile.mkstemp()
        fcntl.flock(lock, fcntl.LOCK_EX)
        r, w = os.pipe()
        assert format_helper.start(markdown._warmed)
        pid = format_helper._helper[0]
        format_helper.format_text("# x\\n")  # the helper is past its start
        fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        os.close(w)
        eof = os.read(r, 1) == b""  # no write end left open in the helper
        os.close(lock)  # gtd lets go of its lock
        again = os.open(path, os.O_RDONLY)
        fcntl.flock(again, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises were the lock still held by a copy in the helper
        print(json.dumps({"fds": fds, "eof": eof}))
    """)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["eof"]
    fds = found["fds"]
    assert {fds[fd] for fd in ("0", "1", "2")} == {"/dev/null"}
    others = [target for fd, target in fds.items() if fd not in ("0", "1", "2")]
    assert len(others) == 2 and all(target.startswith("pipe:") for target in others), fds


def test_mdformats_unused_imports_are_stand_ins_until_first_use():
    """In the helper, importlib.metadata and tomllib (mdformat's plugin discovery and config files) are not
    imported for mdformat.text; code that uses them gets the real modules."""
    result = run_python("""
        import sys
        from gtd.workflow import format_helper, markdown

        class Probe:
            def text(self, request):
                if request == "state":
                    return repr({name: type(sys.modules.get(name)).__name__ for name in format_helper._UNUSED_BY_TEXT})
                import importlib.metadata, tomllib
                return repr((tomllib.loads("a = 1"), importlib.metadata.version("mdformat"),
                             type(sys.modules["tomllib"]).__name__))

        def load():
            markdown._warmed()
            return Probe()

        assert format_helper.start(load)
        print(format_helper.format_text("state"))
        print(format_helper.format_text("use them"))
    """)
    assert result.returncode == 0, result.stderr
    state, used = result.stdout.splitlines()
    assert state == "{'importlib.metadata': '_OnFirstUse', 'tomllib': '_OnFirstUse'}"
    import importlib.metadata

    assert used == repr(({"a": 1}, importlib.metadata.version("mdformat"), "module"))


def test_a_helper_that_dies_leaves_formatting_to_gtd_and_is_reaped():
    result = run_python(f"""
        import os, signal, sys
        from gtd.workflow import format_helper, markdown
        assert format_helper.start(markdown._warmed)
        pid = format_helper._helper[0]
        os.kill(pid, signal.SIGKILL)
        print(repr(format_helper.format_text("# x\\n")), format_helper._helper)
        try:
            os.waitpid(pid, os.WNOHANG)
            print("not reaped")
        except ChildProcessError:
            print("reaped")
        print(repr(markdown.normalized({FORMATS!r})))
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == ["None None", "reaped"]
    assert lines[2] == repr(markdown.normalized(FORMATS)) != repr(FORMATS)  # formatted, in gtd's own process


def test_mdformat_raising_in_the_helper_leaves_the_text_as_it_is():
    result = run_python("""
        from gtd.workflow import format_helper, markdown

        class Broken:
            def text(self, request):
                raise ValueError("no such markdown")

        assert format_helper.start(lambda: Broken())
        try:
            format_helper.format_text("# x\\n")
        except format_helper.FormatFailed as exc:
            print("failed:", exc)
        print(repr(markdown.normalized("# x\\n\\n\\n- [ ] a\\n")))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["failed: ValueError: no such markdown", repr("# x\n\n\n- [ ] a\n")]


def test_stop_ends_and_reaps_the_helper_and_a_second_thread_means_no_fork():
    result = run_python("""
        import os, threading
        from gtd.workflow import format_helper, markdown
        assert format_helper.start(markdown._warmed)
        pid = format_helper._helper[0]
        format_helper.stop()
        print(os.path.exists(f"/proc/{pid}"), format_helper.format_text("# x\\n"))
        stop = threading.Event()
        threading.Thread(target=stop.wait).start()
        print(format_helper.start(markdown._warmed))
        stop.set()
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "None", "False"]


def test_a_thread_threading_does_not_know_of_means_no_fork_either():
    """gtd.background's and the proxy relay's threads are started with _thread, which
    threading.active_count() does not count: a fork beside one could copy a module lock it holds."""
    result = run_python("""
        import _thread
        from gtd.background import Background
        from gtd.workflow import format_helper, markdown
        held = _thread.allocate_lock()
        held.acquire()
        waiting = Background(held.acquire)
        print(format_helper.start(markdown._warmed), format_helper._helper)
        held.release()
        waiting.join()
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "None"]


def test_the_helper_ends_when_gtd_ends_without_stopping_it():
    """Killed gtd (no atexit): its end of the request pipe closes, and the helper exits on its own."""
    result = run_python("""
        import os
        from gtd.workflow import format_helper, markdown
        assert format_helper.start(markdown._warmed)
        print(format_helper._helper[0], flush=True)
        os._exit(0)
    """)
    assert result.returncode == 0, result.stderr
    pid = int(result.stdout)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.02)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Running (an exited child not yet reaped by its new parent is a zombie: not running)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_gtd_plan_forks_the_helper_at_its_start():
    """The fast `gtd plan` path starts the helper before the run context is built."""
    result = run_python("""
        import sys
        from gtd.cli import workflow_run
        from gtd.workflow import format_helper

        def stop(options):
            raise SystemExit(0 if format_helper._helper is not None else 1)

        workflow_run.workflow = stop
        workflow_run.run_phase(None, "plan")
    """)
    assert result.returncode == 0, result.stderr


def test_no_helper_once_mdformat_is_loaded_in_gtd():
    """Bare `gtd` formats the person's edits in process before it plans: plan's prepare then forks nothing."""
    result = run_python("""
        import threading
        from gtd.workflow import format_helper, markdown
        markdown.normalized("# x\\n")
        markdown.prepare_in_background()
        print(format_helper._helper, threading.active_count())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1"]
