"""`gtd status` answered by the entry point without typer (issue 13) says exactly what the typer
command says: same stdout, stderr and exit code, for every repository state below. Its text is
what rich printed before the fast path existed (for text without control characters).

Timing is in benchmarks/bench_startup.py; no test here measures time.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import git

FAST = "import sys; sys.argv[0] = 'gtd'; from gtd.cli.entry import main; main()"  # what the `gtd` script runs
FULL = "import sys; sys.argv[0] = 'gtd'; from gtd.cli.app import main; main()"  # always through typer
PLAN = "# Counter\n\n## Action items\n\n- [ ] Add count.py\n  - Tests: t\n- [x] Write README\n  - Tests: t\n\n" \
       "## Open questions\n\n## Learnings\n"


def _run(argv: list[str], cwd: Path, env: dict | None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


def both(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The fast path's result, after checking it is the typer command's to the byte."""
    fast = _run([sys.executable, "-c", FAST, *args], cwd, env)
    full = _run([sys.executable, "-c", FULL, *args], cwd, env)
    assert (fast.stdout, fast.stderr, fast.returncode) == (full.stdout, full.stderr, full.returncode)
    return fast


def commit(repo: Path, subject: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)


def _fresh(repo: Path) -> None:
    pass


def _seed_uncommitted(repo: Path) -> None:
    (repo / "TODO.md").write_text("# Counter\nadd numbers\n")


def _plan_to_build(repo: Path) -> None:
    (repo / "TODO.md").write_text(PLAN)
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "python3 -m unittest -q"}))
    commit(repo, "📝 plan: Counter")


def _all_checked_original_history(repo: Path) -> None:
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]"))
    (repo / "package.json").write_text(json.dumps({"scripts": {"test": "vitest"}}))
    commit(repo, "🤖 plan: structured action items")
    commit_empty = ["commit", "-q", "--allow-empty", "-m", "🔨 build: Add count.py"]
    git(repo, *commit_empty)


def _fix_and_feedback_pending(repo: Path) -> None:
    _plan_to_build(repo)
    (repo / "app.py").write_text("".join(f"line {i}\n" for i in range(30)))
    commit(repo, "🔨 build: app")
    lines = [f"line {i}\n" for i in range(30)]
    lines[2] = "line 2 fixed\n"
    lines[25] = "line 25\n# hack: make this configurable\n"
    (repo / "app.py").write_text("".join(lines))
    (repo / "notes.py").write_text("# xxx: and this\n")


def _ticked_by_hand(repo: Path) -> None:
    _plan_to_build(repo)
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]") + "- Keep it small.\n")


def _unsafe_untracked(repo: Path) -> None:
    (repo / ".env").write_text("KEY=1\n")
    (repo / "main.py").write_text("print(1)\n")


def _learned(repo: Path) -> None:
    _plan_to_build(repo)
    (repo / "TODO.md").unlink()
    commit(repo, "📚 learn: merged")


def _many_files_and_odd_names(repo: Path) -> None:
    _plan_to_build(repo)
    for i in range(12):
        (repo / f"file{i}.txt").write_text("x\n")
    (repo / "tab\there.txt").write_text("x\n")
    (repo / "new\nnext: learn.txt").write_text("x\n")  # a file name trying to forge a line
    (repo / "ctl\x1b[31m.txt").write_text("x\n")


def _no_commits(repo: Path) -> None:
    git(repo, "update-ref", "-d", "HEAD")  # an unborn branch, the files staged
    (repo / "TODO.md").write_text("# Goal\n")


STATES = [_fresh, _seed_uncommitted, _plan_to_build, _all_checked_original_history, _fix_and_feedback_pending,
          _ticked_by_hand, _unsafe_untracked, _learned, _many_files_and_odd_names, _no_commits]


@pytest.mark.parametrize("state", STATES, ids=[s.__name__.strip("_") for s in STATES])
def test_status_text_and_json_are_the_typer_commands(repo, state):
    state(repo)
    text = both("status", cwd=repo)
    shown = both("status", "--json", cwd=repo)
    assert text.returncode == shown.returncode == 0, text.stderr
    result = json.loads(shown.stdout)
    assert text.stdout.splitlines()[0] == f"next: {result['next']}"
    assert shown.stdout.isascii()
    # every field is one line: a file name holding a newline never starts a line of its own
    assert len(text.stdout.splitlines()) == 3 + bool(result["commit"]) + bool(result["pending_edits"])


def test_a_file_name_that_is_not_utf8_is_listed_escaped_not_a_crash(repo):
    """The agent can leave a file whose name is not UTF-8 (byte 0x9b is CSI on an 8-bit terminal):
    `gtd status` lists it with its bytes made visible, on both paths, instead of a traceback."""
    _plan_to_build(repo)
    name = b"ctl\x9b31m\xff.txt"
    os.close(os.open(os.fsencode(repo) + b"/" + name, os.O_CREAT | os.O_WRONLY, 0o644))
    runs = [subprocess.run([sys.executable, "-c", code, "status", *json_flag], cwd=repo, capture_output=True,
                           stdin=subprocess.DEVNULL) for code in (FAST, FULL) for json_flag in ((), ("--json",))]
    for run in runs:
        assert run.returncode == 0, run.stderr.decode(errors="replace")
        assert b"\x9b" not in run.stdout and b"\xff" not in run.stdout and b"Traceback" not in run.stderr
    assert runs[0].stdout == runs[2].stdout and runs[1].stdout == runs[3].stdout
    assert b"ctl\\udc9b31m\\udcff.txt" in runs[0].stdout
    assert json.loads(runs[1].stdout)["pending_edits"]


def test_directory_options_and_errors_are_the_typer_commands(repo, tmp_path):
    _plan_to_build(repo)
    inner = repo / "sub"
    inner.mkdir()
    expected = both("status", "--json", cwd=repo).stdout
    assert both("status", "--json", "-C", str(repo), cwd=tmp_path).stdout == expected
    assert both("-C", str(repo), "status", "--json", cwd=tmp_path).stdout == expected
    assert both("--directory", "repo", "status", "--directory=sub", "--json", cwd=tmp_path).stdout == expected
    assert both("status", "--json", "-C", str(inner), cwd=tmp_path).stdout == expected
    outside = both("status", cwd=tmp_path)
    assert outside.returncode == 2 and "is not inside a git repository: run `git init` first" in outside.stderr
    missing = both("-C", str(tmp_path / "nowhere"), "status", cwd=tmp_path)
    assert missing.returncode == 2 and "No such file or directory" in missing.stderr


def test_config_warnings_and_errors_are_the_typer_commands(repo):
    warned = both("status", cwd=repo, env={"GTD_TEST_CMD": "make check"})
    assert warned.returncode == 0 and "warning: GTD_TEST_CMD" in warned.stderr
    (repo / ".gtdrc.json").write_text('{"testRetries": "many"}')
    broken = both("status", "--json", cwd=repo)
    assert broken.returncode != 0 and ".gtdrc.json" in broken.stderr and broken.stdout == ""
    (repo / ".gtdrc.json").unlink()
    os.symlink("/etc/passwd", repo / ".gtdrc.json")
    refused = both("status", cwd=repo)
    assert refused.returncode != 0 and "symlink" in refused.stderr


@pytest.mark.parametrize("args", [["status", "--help"], ["status", "--jsn"], ["status", "extra"]])
def test_other_command_lines_still_go_to_typer(repo, args):
    result = both(*args, cwd=repo)
    assert result.returncode == (0 if "--help" in args else 2)
    assert ("Usage:" in result.stdout) if "--help" in args else ("No such option" in result.stderr
                                                                   or "unexpected extra argument" in result.stderr)


def test_status_imports_neither_typer_nor_rich_nor_pydantic(repo):
    from test_fast_paths import probe

    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))
    probe(["status"], repo)  # validates the config once, fills the cache
    # The host git runs status makes (gtd.workflow.git builds on them): small, and nothing of the sandbox's own.
    code = ("HOST_GIT = ('gtd.sandbox.host', 'gtd.sandbox.host.host_git', 'gtd.sandbox.host.special_files')\n"
            "import sys; sys.argv[0] = 'gtd'; from gtd.cli.entry import main\ntry:\n    main()\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'pydantic',"
            " 'tomlkit', 'filelock') or m.startswith(('gtd.sandbox.', 'gtd.providers', 'gtd.escalation'))"
            " and m not in HOST_GIT))")
    result = subprocess.run([sys.executable, "-c", code, "status"], cwd=repo, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
    assert "tests: test command: make check (configured)" in result.stdout


def _rich_text(result: dict, tests: str) -> str:
    """What the typer command printed through rich before the fast path (the markup it used)."""
    from rich.markup import escape

    from gtd.terminal_text import SafeConsole

    out = io.StringIO()
    console = SafeConsole(file=out, soft_wrap=True)
    console.print(f"[bold]next:[/bold] {escape(result['next'])}")
    console.print(f"[bold]why:[/bold] {escape(result['reason'])}  [dim](rule: {escape(result['rule'])})[/dim]")
    if result.get("commit"):
        console.print(f"[bold]from commit:[/bold] {escape(result['commit']['sha'][:10])} "
                      f"{escape(result['commit']['subject'])}")
    pending = result.get("pending_edits")
    if pending:
        console.print(f"[bold]uncommitted:[/bold] {escape(', '.join(pending['paths'][:10]))}"
                      f"{' …' if len(pending['paths']) > 10 else ''} -> {escape(pending['what'])}")
    console.print(f"[bold]tests:[/bold] {escape(tests)}")
    return out.getvalue()


def _rich_json(result: dict) -> str:
    from gtd.terminal_text import SafeConsole

    out = io.StringIO()
    SafeConsole(file=out, soft_wrap=True).print_json(json.dumps(result))
    return out.getvalue()


@pytest.mark.parametrize("state", STATES[:-2], ids=[s.__name__.strip("_") for s in STATES[:-2]])
def test_the_output_is_what_rich_printed_before(repo, state, monkeypatch):
    from gtd.cli.status_cmd import render_json, render_text
    from gtd.terminal_text import styled
    from gtd.workflow import testcmd
    from gtd.workflow.steps import predict

    state(repo)
    (repo / "weird [bold]name[red] :smiley.txt").write_text("x\n")  # markup in a file name stays text
    result = predict(repo)
    tests = testcmd.resolve(None, repo)
    result["test_command"] = {"command": tests.command, "source": tests.source or None}
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    assert styled(render_text(result, tests.describe()), stream=io.StringIO()) == _rich_text(result, tests.describe())
    assert render_json(result) == _rich_json(result)


def test_styles_only_on_a_terminal_text_never_carries_control_codes(monkeypatch):
    from gtd.terminal_text import styled

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    line = [("next:", "bold"), (" a\x1b[2Jb ", None), ("gtd: error:", "red")]
    assert styled(line, stream=io.StringIO()) == "next: a\\x1b[2Jb gtd: error:"
    assert styled(line, stream=Terminal()) == "\x1b[1mnext:\x1b[0m a\\x1b[2Jb \x1b[31mgtd: error:\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert styled(line, stream=Terminal()) == "\x1b[1mnext:\x1b[0m a\\x1b[2Jb gtd: error:"
    monkeypatch.setenv("TERM", "dumb")
    assert styled(line, stream=Terminal()) == "next: a\\x1b[2Jb gtd: error:"
