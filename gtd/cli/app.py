"""The `gtd` entry point: the command tree, global error handling and exit codes."""


import sys
from typing import Annotated

import typer

from gtd import __version__
from gtd.cli import config_cmds, doctor_cmd, options as opt, workflow_cmds
from gtd.cli.context import stderr
from gtd.cli.options import RunOptions
from gtd.errors import GtdError
from gtd.exitcodes import ExitCode
from gtd.terminal_text import markup, write

app = typer.Typer(
    name="gtd",
    help="Run a coding agent through plan -> build -> learn, every phase inside an OS sandbox.\n\n"
    "With no command, gtd looks at git state and runs the next step.\n\n"
    "Examples:\n\n\b\n"
    "  gtd plan \"Add a --json flag to the export command\"\n"
    "  gtd            # the next step: plan, build one item, learn or clean up\n"
    "  gtd --all      # until the plan is done or a person is needed\n"
    "  gtd --all --non-interactive --json > events.jsonl   # CI",
    no_args_is_help=False,
    add_completion=True,  # --install-completion / --show-completion; Tab runs this same fast start-up path
    rich_markup_mode=None,  # plain help: rendering it with rich costs more than the whole start-up budget
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        write(f"gtd {__version__}\n")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    run_all: Annotated[bool, typer.Option("--all", help="Keep going until the plan is done or a person is needed.")] = False,
    single: Annotated[bool, typer.Option("--single", help="Run exactly one step; with uncommitted edits, only commit them (as the original gtd's --single).")] = False,
    provider: opt.Provider = None, model: opt.Model = None, level: opt.LevelOpt = None,
    non_interactive: opt.NonInteractive = False, quiet: opt.Quiet = False, verbose: opt.Verbose = False,
    directory: opt.Directory = None, json_events: opt.JsonEvents = False, build_on_red: opt.BuildOnRed = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    """Run the next step (commit your edits as feedback/fix, then plan, build, learn or clean up)."""
    options = RunOptions(provider, model, level, non_interactive, quiet, verbose, directory, json_events, build_on_red)
    if run_all and single:
        raise GtdError("--all and --single contradict each other: pick one", exit_code=ExitCode.USAGE)
    if ctx.invoked_subcommand is None:
        workflow_cmds.next_step(options, run_all, single=single)
        return
    if run_all or single:
        raise GtdError(f"--{'all' if run_all else 'single'} applies to `gtd` alone, not to `gtd {ctx.invoked_subcommand}`"
                       + (" (use `gtd build --single` to build one step)" if ctx.invoked_subcommand == "build" else ""),
                       exit_code=ExitCode.USAGE)
    if directory is not None:  # like `git -C`: every subcommand then runs as if started there
        import os

        try:
            os.chdir(directory)
        except OSError as exc:
            raise GtdError(f"-C {directory}: {exc.strerror}", exit_code=ExitCode.USAGE) from None
        options.directory = None
    given = [name for name, value in (("--provider", provider), ("--model", model), ("--level", level),
                                      ("--non-interactive", non_interactive), ("--quiet", quiet),
                                      ("--verbose", verbose), ("--json", json_events),
                                      ("--build-on-red", build_on_red)) if value not in (None, False)]
    if given and ctx.invoked_subcommand not in workflow_cmds.RUN_COMMANDS:
        raise GtdError(f"{', '.join(given)} given before `{ctx.invoked_subcommand}`, which does not run the agent and "
                       "does not take it: leave it out", exit_code=ExitCode.USAGE)
    ctx.obj = options  # options given before the subcommand: merged into the subcommand's own (RunOptions.merged)


workflow_cmds.register(app)
config_cmds.register(app)
doctor_cmd.register(app)


def _register_layers() -> None:
    """Command groups owned by the sandbox and escalation layers."""
    from gtd.cli import escalation_cmds, sandbox_cmd

    sandbox_cmd.register(app)
    escalation_cmds.register(app)


_register_layers()


def _completed_words() -> list[str] | None:
    """The words before the one being completed when this run answers a Tab press (typer's
    completion variables are set), else None. Words the shell quoted stay quoted: they then name no
    command, and the whole tree answers."""
    import os

    if not any(key.endswith("_COMPLETE") for key in os.environ):
        return None
    if "COMP_WORDS" in os.environ:  # bash
        words = os.environ["COMP_WORDS"].split()
        try:
            return words[1:int(os.environ.get("COMP_CWORD", ""))]
        except ValueError:
            return []
    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")  # zsh, fish, powershell: the line up to the cursor
    words = line.split()[1:]
    return words if line.endswith(" ") else words[:-1]


def _for_invocation(argv: list[str]) -> typer.Typer:
    """The command tree this invocation needs. typer inspects the signature of every command before
    it runs one, a good part of gtd's start-up: when the first argument names a command or group,
    only that one is built (`gtd --help`, root options first, completing the first word: the whole
    tree). A Tab press is judged by the words already completed."""
    import copy

    completed = _completed_words()
    if completed is not None:
        argv = completed
    if not argv or argv[0].startswith("-"):
        return app
    commands = [c for c in app.registered_commands if (c.name or c.callback.__name__.replace("_", "-")) == argv[0]]
    groups = [g for g in app.registered_groups if g.name == argv[0]]
    if not commands and not groups:
        return app  # unknown: the full tree, so the error can suggest the command meant
    pruned = copy.copy(app)
    pruned.registered_commands, pruned.registered_groups = commands, groups
    return pruned


def _plain_completion_help() -> None:
    """zsh, fish and PowerShell show each completion's help; typer renders it through rich first,
    to strip rich markup. gtd's help is plain text (rich_markup_mode=None), and importing rich would
    double the time of every Tab press (and rich folds long help into several lines, which zsh then
    shows broken). typer is pinned <0.28; tests/cli/test_fast_paths.py checks the completions."""
    from typer import _completion_classes

    _completion_classes._sanitize_help_text = lambda text: text


def main() -> None:
    """Run the CLI; gtd's own errors become a one-line message and their documented exit code."""
    try:
        tree = _for_invocation(sys.argv[1:])
        if _completed_words() is not None:
            _plain_completion_help()
        tree()
    except GtdError as exc:
        stderr.print(f"[red]gtd: error:[/red] {markup(str(exc))}", highlight=False)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Terminated: its own exit code)
        _interrupted(exc)
    except SystemExit as exc:
        interrupt = _typers_interrupt(exc)
        if interrupt is None:
            raise
        _interrupted(interrupt)


def _interrupted(exc: KeyboardInterrupt) -> None:
    """Exit as the fast entry does after an interrupt: 130 for Ctrl-C, 128 + the signal for SIGTERM/SIGHUP."""
    stderr.print("\n[yellow]interrupted[/yellow]")
    sys.exit(int(getattr(exc, "exit_code", ExitCode.INTERRUPTED)))


def _typers_interrupt(exc: SystemExit) -> KeyboardInterrupt | None:
    """The interrupt behind typer's exit 130: a KeyboardInterrupt in a command becomes `Exit(130) from it`
    in typer.core._main, so a SIGTERM (errors.Terminated, 143) would exit 130 like Ctrl-C. None for any
    other exit."""
    if exc.code != ExitCode.INTERRUPTED:
        return None
    seen, cause = set(), exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
