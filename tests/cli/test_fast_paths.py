"""The commands people run most start without the heavy libraries (issue 13).

Timing is measured in benchmarks/bench_startup.py; these tests pin the structural reason it is fast:
which modules a command imports. A new command module that imports rich, pydantic or the sandbox at
its top level fails here instead of silently slowing every `gtd --help` and every Tab press.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

HEAVY = ("pydantic", "rich", "tomlkit", "filelock", "gtd.sandbox", "gtd.providers", "gtd.workflow", "gtd.escalation")

PROBE = """
import json, os, sys
from gtd.cli.entry import main
sys.argv[0] = "gtd"  # the program name decides the completion variable (_GTD_COMPLETE)
try:
    main()
except SystemExit:
    pass
heavy = json.loads(os.environ["PROBE_HEAVY"])
sys.stderr.write("\\nPROBE:" + json.dumps(sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})))
"""


def probe(args: list[str], cwd, env: dict | None = None) -> tuple[list[str], str]:
    """Run gtd's entry point with args; the heavy modules it imported, and its stdout."""
    full_env = {**os.environ, "PROBE_HEAVY": json.dumps(HEAVY), **(env or {})}
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True,
                            env=full_env, stdin=subprocess.DEVNULL)
    assert "PROBE:" in result.stderr, result.stderr
    heavy = json.loads(result.stderr.rsplit("PROBE:", 1)[1])
    if "pydantic" in heavy and "rich" not in heavy:
        import typer

        assert typer.__version__ < "0.28", (f"typer {typer.__version__} coerces every parameter through pydantic: "
                                            "pyproject.toml pins typer<0.28; reinstall with pip install -e '.[test]'")
    return heavy, result.stdout


def imported_heavy(args: list[str], cwd, env: dict | None = None) -> list[str]:
    return probe(args, cwd, env)[0]


@pytest.mark.parametrize("args", [["--help"], ["sandbox", "--help"], ["config", "show", "--help"], ["--version"]])
def test_help_imports_nothing_heavy(repo, args):
    assert imported_heavy(args, repo) == []


def test_bash_completion_imports_nothing_heavy(repo):
    env = {"_GTD_COMPLETE": "complete_bash", "COMP_WORDS": "gtd sa", "COMP_CWORD": "1"}
    heavy, out = probe([], repo, env)
    assert heavy == []
    assert "sandbox" in out.split()


TAB_PRESSES = ["gtd ", "gtd sa", "gtd sandbox ", "gtd sandbox run --", "gtd sandbox run --level ", "gtd config ",
               "gtd --", "gtd -C . sta", "gtd status --", "gtd build --", "gtd approve --"]
# The whole command tree through typer as it is (help rendered through rich, as wide as it likes):
# what every Tab press answered before gtd pruned the tree and kept rich out.
WHOLE_TREE = "import sys; sys.argv[0] = 'gtd'; from gtd.cli.app import app; app()"


def _completion_env(shell: str, line: str) -> dict:
    if shell == "bash":
        words = line.split() + ([""] if line.endswith(" ") else [])
        return {"_GTD_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    return {"_GTD_COMPLETE": f"complete_{shell}", "_TYPER_COMPLETE_ARGS": line,
            "_TYPER_COMPLETE_FISH_ACTION": "get-args", "COLUMNS": "1000"}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_imports_nothing_heavy_and_answers_as_the_whole_tree(repo, shell):
    for line in TAB_PRESSES:
        env = _completion_env(shell, line)
        heavy, out = probe([], repo, env)
        assert heavy == [], (line, heavy)
        whole = subprocess.run([sys.executable, "-c", WHOLE_TREE], cwd=repo, capture_output=True, text=True,
                               env={**os.environ, **env}, stdin=subprocess.DEVNULL)
        assert out == whole.stdout, line
    assert "--pending-json" in probe([], repo, _completion_env(shell, "gtd sandbox run --"))[1]


@pytest.mark.parametrize("args", [["config", "show"], ["config", "show", "--json", "--origin"]])
def test_config_show_from_the_cache_imports_nothing_heavy(repo, args):
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))
    first = imported_heavy(args, repo)
    assert "pydantic" in first  # validated once
    assert imported_heavy(args, repo) == []


@pytest.mark.bwrap
def test_sandbox_run_builds_no_pydantic_models_and_imports_no_rich(repo):
    """`gtd sandbox run` reads the cached validated config through a view, and imports the escalation
    layer only when a connection needs a decision."""
    imported_heavy(["config", "show"], repo)  # validates once, fills the cache
    heavy = imported_heavy(["sandbox", "run", "--", "true"], repo)
    assert not {"pydantic", "rich", "tomlkit", "filelock", "gtd.escalation"} & set(heavy), heavy


def test_the_named_command_runs_the_same_with_the_whole_tree_or_only_its_own(repo, tmp_path):
    """`gtd config show` builds only the config group; `gtd -C repo config show` (a root option first)
    builds the whole tree: same answer. An unknown command still gets the suggestion from the whole tree."""
    from support import run_gtd

    own = run_gtd("config", "show", "--json", cwd=repo)
    whole = run_gtd("-C", str(repo), "config", "show", "--json", cwd=tmp_path)
    assert own.returncode == whole.returncode == 0, (own.stderr, whole.stderr)
    assert json.loads(own.stdout)["config"] == json.loads(whole.stdout)["config"]
    typo = run_gtd("buil", cwd=repo)
    assert typo.returncode == 2 and "build" in typo.stderr


def test_command_modules_keep_their_annotations_evaluated():
    """typer reads every command's signature before it runs one (all of them for `gtd --help` and a
    Tab press). With `from __future__ import annotations` each annotation is a string typer compiles
    and evaluates, twice: that alone cost about a third of `gtd --help`."""
    from pathlib import Path

    import gtd.cli

    cli = Path(gtd.cli.__file__).parent
    commands = sorted(p.name for p in cli.glob("*.py") if "@app.command" in p.read_text()
                      or ".command(" in p.read_text() or "@app.callback" in p.read_text())
    assert {"app.py", "config_cmds.py", "workflow_cmds.py"} <= set(commands)
    postponed = [name for name in commands + ["options.py"] if "from __future__ import annotations" in (cli / name).read_text()]
    assert postponed == []


# -- plan, build and learn without typer ---------------------------------------------------------

WORKFLOW_LINES = [
    ["plan"], ["plan", "Add a flag"], ["plan", "Add a flag", "-p", "scripted"], ["plan", "--provider=pi", "goal"],
    ["plan", "-m", "opus", "--level", "network", "--non-interactive", "-q", "--json"], ["plan", "", "-v"],
    ["plan", "-C", "sub", "goal"], ["-C", ".", "plan", "goal"], ["--directory=.", "plan"],
    ["build"], ["build", "--one"], ["build", "--single", "--verbose", "--quiet"], ["build", "--level=full", "--model", "m"],
    ["learn"], ["learn", "--provider", "scripted", "--json"],
]
TYPER_ONLY = [  # the fast parser leaves these to typer (help, errors, repeats, anything unusual)
    ["plan", "a", "b"], ["plan", "--help"], ["plan", "-h"], ["plan", "--level", "bogus"], ["plan", "-q", "--quiet"],
    ["plan", "-p", "a", "-p", "b"], ["plan", "--", "-goal"], ["plan", "-qv"], ["build", "goal"],
    ["build", "--one", "--one"], ["learn", "goal"], ["plan", "--model"], ["-p", "pi", "plan"], ["--all"], [],
    ["build", "--provider", "-x"],
]


def _record_workflow(monkeypatch) -> list:
    """What the command would run: the RunOptions, and the phase function with its arguments (no agent runs)."""
    from contextlib import contextmanager

    from gtd.cli import workflow_cmds, workflow_run
    from gtd.workflow import build, learn, plan

    calls: list = []

    @contextmanager
    def workflow(options):
        calls.append(("options", options))
        yield "ctx"

    monkeypatch.setattr(workflow_run, "workflow", workflow)
    monkeypatch.setattr(workflow_cmds, "workflow", workflow)
    monkeypatch.setattr(plan, "plan", lambda ctx, goal=None: calls.append(("plan", goal)))
    # build and build_step say whether they built anything (run_phase reports "nothing to build" otherwise)
    monkeypatch.setattr(build, "build", lambda ctx: calls.append(("build",)) or True)
    monkeypatch.setattr(build, "build_step", lambda ctx: calls.append(("build_step",)) or True)
    monkeypatch.setattr(learn, "learn", lambda ctx: calls.append(("learn",)))
    return calls


@pytest.mark.parametrize("argv", WORKFLOW_LINES, ids=" ".join)
def test_workflow_fast_path_runs_what_typer_runs(repo, monkeypatch, argv):
    from gtd.cli import app, entry

    (repo / "sub").mkdir()
    monkeypatch.chdir(repo)
    calls = _record_workflow(monkeypatch)
    fast = entry._fast_workflow(argv)
    assert fast is not None
    fast()
    by_fast, calls[:] = list(calls), []
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "argv", ["gtd", *argv])
    with pytest.raises(SystemExit) as exit_:
        app.main()
    assert exit_.value.code in (0, None)
    assert by_fast == calls and len(calls) == 2


@pytest.mark.parametrize("argv", TYPER_ONLY, ids=lambda argv: " ".join(argv) or "(none)")
def test_workflow_fast_path_leaves_the_rest_to_typer(argv):
    from gtd.cli import entry

    assert entry._fast_workflow(argv) is None


def test_workflow_command_imports_neither_typer_nor_pydantic(repo):
    """A phase started from a plain command line imports no typer; with the config cached, no pydantic
    (the first load validates and fills the cache). It stops early here: there is no TODO.md to build."""
    env = {"PROBE_HEAVY": json.dumps(["typer", "click", "pydantic"])}
    argv = ["build", "--provider", "scripted", "--non-interactive"]
    assert imported_heavy(argv, repo, env) == ["pydantic"]
    assert imported_heavy(argv, repo, env) == []


PLAN = """# Hello

## Action items
- [ ] Say hello
  - Tests: none

## Open questions

## Learnings
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_phase_without_a_terminal_prints_its_lines_without_rich(repo):
    """On a stream rich would style nothing on (a pipe, no FORCE_COLOR), a phase's progress lines are the
    plain text rich would print (terminal_text.plain_markup, checked against rich in tests/terminal), and
    rich is never imported; told the stream is a terminal (FORCE_COLOR), rich prints them, styled."""
    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json")}))
    git_env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "configure gtd"], cwd=repo, check=True, env={**os.environ, **git_env})

    def plan(goal: str, extra_env: dict) -> tuple[list[str], str]:
        env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
        env.update(PROBE_HEAVY=json.dumps(["rich"]), **extra_env)
        result = subprocess.run([sys.executable, "-c", PROBE, "plan", goal, "--non-interactive"], cwd=repo,
                                capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
        assert "PROBE:" in result.stderr, result.stderr
        lines, heavy = result.stderr.rsplit("PROBE:", 1)
        return json.loads(heavy), lines

    heavy, lines = plan("say hello", {})
    assert heavy == []
    assert "✓ plan 1 item(s) in TODO.md" in lines and "summary (ok, " in lines and "\x1b[" not in lines
    heavy, lines = plan("say hello again", {"FORCE_COLOR": "1"})
    assert heavy == ["rich"]
    assert "✓ plan" in lines and "\x1b[" in lines
