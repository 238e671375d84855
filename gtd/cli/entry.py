"""The `gtd` console script. The commands run most often are answered without building the typer
command tree (typer and click cost more than their whole start-up budget, issue 13):

    gtd sandbox run ...                       cli/sandbox_run.py (fast_main parses its options)
    gtd [-C DIR] status [--json] [-C DIR]     cli/status_cmd.py
    gtd [-C DIR] config show [--origin] [--json] [-C DIR] [--provider P] [--model M]   cli/config_show.py
    gtd [-C DIR] plan [GOAL] | build [--one] | learn  [RUN OPTIONS]          cli/workflow_run.py

Every other invocation, and any of these the fast parsers do not recognise exactly (help, a typo,
Tab completion), goes to the full CLI (cli/app.py), which runs the same code after typer parsed it.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable

_VALUED = {"-C": "-C", "--directory": "-C", "-p": "--provider", "--provider": "--provider", "-m": "--model",
           "--model": "--model", "--level": "--level"}
# The run options of plan, build and learn (cli/options.py), as the fast parser spells them.
_RUN_FLAGS = {"--non-interactive": "non_interactive", "--quiet": "quiet", "-q": "quiet", "--verbose": "verbose",
              "-v": "verbose", "--json": "json"}
_RUN_VALUED = ("-C", "--provider", "--model", "--level")


def _options(args: list[str], flags: tuple[str, ...], valued: tuple[str, ...] = ("-C",)) -> dict[str, str | bool] | None:
    """`args` as {option: value}: the given flags, and the options in `valued` (by their canonical
    name: -C, --provider, --model) spelled `-C DIR`, `--directory DIR` or `--directory=DIR`; each at
    most once. None for anything else (typer then parses it and says what is wrong)."""
    found: dict[str, str | bool] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        spelled, equals, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if _VALUED.get(spelled) in valued:
            if equals:
                value = attached
            elif i + 1 < len(args):
                value = args[i + 1]
                i += 1
            else:
                return None
            name = _VALUED[spelled]
        elif arg in flags:
            name, value = arg, True
        else:
            return None
        if name in found or value == "" or (isinstance(value, str) and value.startswith("-")):
            return None
        found[name] = value
        i += 1
    return found


def _split(argv: list[str], command: list[str]) -> tuple[dict, list[str]] | None:
    """(the root options before `command`, the arguments after it) when argv is `[-C DIR] COMMAND ...`."""
    if any(key.endswith("_COMPLETE") for key in os.environ):  # a Tab press: typer answers it
        return None
    for at in range(len(argv) - len(command) + 1):
        if argv[at:at + len(command)] == command:
            before = _options(argv[:at], ())
            return None if before is None else (before, argv[at + len(command):])
    return None


def _fast_status(argv: list[str]) -> Callable[[], None] | None:
    """`gtd status` for this command line, or None when typer must parse it."""
    split = _split(argv, ["status"])
    after = None if split is None else _options(split[1], ("--json",))
    if after is None:
        return None

    def status() -> None:
        from pathlib import Path

        from gtd.cli.status_cmd import run

        _root(split[0])
        run(Path(str(after["-C"])) if "-C" in after else None, bool(after.get("--json")))

    return status


def _fast_config_show(argv: list[str]) -> Callable[[], None] | None:
    """`gtd config show` for this command line, or None when typer must parse it."""
    split = _split(argv, ["config", "show"])
    after = None if split is None else _options(split[1], ("--origin", "--json"), ("-C", "--provider", "--model"))
    if after is None:
        return None

    def config_show() -> None:
        from pathlib import Path

        from gtd.cli.config_show import show

        _root(split[0])
        show(bool(after.get("--origin")), bool(after.get("--json")), Path(str(after["-C"])) if "-C" in after else None,
             after.get("--provider"), after.get("--model"))  # type: ignore[arg-type]

    return config_show


def _positionals(args: list[str]) -> list[int]:
    """Where the words that are neither an option nor a valued option's value stand in args."""
    found, i = [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            i += 2 if _VALUED.get(arg) in _RUN_VALUED else 1  # `--model=M` is one word
        else:
            found.append(i)
            i += 1
    return found


def _fast_workflow(argv: list[str]) -> Callable[[], None] | None:
    """`gtd plan [GOAL]`, `gtd build [--one|--single]` or `gtd learn` with run options after the command
    (each at most once, values not starting with `-`, a known --level), or None when typer must parse it:
    the workflow then starts without typer and click (~50 ms of every phase, issue 13)."""
    for command in ("plan", "build", "learn"):
        split = _split(argv, [command])
        if split is not None:
            break
    else:
        return None
    args, goal, one = list(split[1]), None, False
    if command == "plan":
        words = _positionals(args)
        if len(words) > 1:
            return None
        if words:
            goal = args.pop(words[0])
    elif command == "build":
        one = any(arg in ("--one", "--single") for arg in args)
        args = [arg for arg in args if arg not in ("--one", "--single")]
        if len(args) < len(split[1]) - 1:
            return None  # --one given twice: typer decides
    options = _options(args, tuple(_RUN_FLAGS), _RUN_VALUED)
    if options is None or len({_RUN_FLAGS[name] for name in options if name in _RUN_FLAGS}) < \
            sum(1 for name in options if name in _RUN_FLAGS):  # -q and --quiet together: typer decides
        return None
    from gtd.config.levels import Level

    if "--level" in options and options["--level"] not in {level.value for level in Level}:
        return None  # typer says which levels there are

    def run() -> None:
        from pathlib import Path

        from gtd.cli.run_options import RunOptions
        from gtd.cli.workflow_run import run_phase

        _root(split[0])
        run_options = RunOptions(
            provider=options.get("--provider"), model=options.get("--model"),  # type: ignore[arg-type]
            level=Level(options["--level"]) if "--level" in options else None,
            directory=Path(str(options["-C"])) if "-C" in options else None,
            **{field: True for name, field in _RUN_FLAGS.items() if name in options})
        try:
            run_phase(run_options, command, goal=goal, one=one)
        except EOFError:  # end of input at a question: what click makes of it under typer
            from gtd.terminal_text import write

            write("\nAborted!\n", stream=sys.stderr)
            raise SystemExit(1) from None

    return run


def _root(options: dict) -> None:
    """The root options given before the command (only -C reaches a fast command)."""
    if "-C" in options:  # like the root option: every subcommand runs as if started there
        from pathlib import Path

        _chdir(Path(str(options["-C"])))


def _chdir(directory) -> None:
    from gtd.errors import GtdError
    from gtd.exitcodes import ExitCode

    try:
        os.chdir(directory)
    except OSError as exc:
        raise GtdError(f"-C {directory}: {exc.strerror}", exit_code=ExitCode.USAGE) from None


def _run_fast(command: Callable[[], None]) -> int:
    """Run a fast command; gtd's own errors become the full CLI's one-line message and exit code."""
    from gtd.errors import GtdError
    from gtd.exitcodes import ExitCode
    from gtd.terminal_text import write_styled

    try:
        command()
    except GtdError as exc:
        write_styled([("gtd: error:", "red"), (f" {exc}\n", None)], stream=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Terminated: its own exit code)
        write_styled([("\n", None), ("interrupted", "yellow"), ("\n", None)], stream=sys.stderr)
        return int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))
    return int(ExitCode.OK)


def _clean_up_on_termination() -> None:
    """SIGTERM and SIGHUP (`kill`, the terminal closed, a cancelled CI job) end gtd the way Ctrl-C does,
    through its clean-up: they raise Terminated, a KeyboardInterrupt, so an open sandbox session stops
    what runs in it and quarantines what the agent planted, and a workflow phase records `interrupted`
    and leaves the agent's changes remembered as the agent's. Python's default, dying at once, left a
    planted repository behind for the next session to take as the person's own, whose config then ran
    under gtd's own git. (A SIGHUP ignored by `nohup` stays ignored.)

    Only the first signal raises: `kill` twice, or a closed terminal's SIGHUP followed by a SIGTERM,
    would otherwise raise again inside the clean-up (an __exit__, a finally) and cut the quarantine
    short. Later ones are caught and dropped rather than set to SIG_IGN, which the programs the
    clean-up starts (git, kill) would inherit."""
    import signal

    from gtd.errors import Terminated

    watched = [sig for sig in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(sig) == signal.SIG_DFL]

    def stop(signum, _frame):
        for sig in watched:
            signal.signal(sig, _cleaning_up)
        raise Terminated(signum)

    for sig in watched:
        signal.signal(sig, stop)


def _cleaning_up(_signum, _frame) -> None:
    """A termination signal that arrives while gtd cleans up after the first: it is already stopping."""


def main() -> None:
    _clean_up_on_termination()
    argv = sys.argv[1:]
    if argv[:1] == ["sandbox"]:
        import gc

        # No collections while gtd starts the command: its imports and set-up allocate ~100,000 objects that
        # all live on, and the 13 collections that found nothing to free cost ~2 ms (issue 13). The command
        # started, run_in_sandbox freezes them and turns collection back on for the proxy's long life.
        gc.disable()
        from gtd.cli.sandbox_run import fast_main

        code = fast_main(argv)
        if code is not None:
            sys.exit(code)
        gc.enable()  # typer's command tree: the ordinary way
    fast = _fast_status(argv) or _fast_config_show(argv) or _fast_workflow(argv)
    if fast is not None:
        sys.exit(_run_fast(fast))
    from gtd.cli.app import main as full_main

    full_main()


def run() -> None:
    """The console script (and `python -m gtd`): main(), then the process ends without the
    interpreter's teardown, which frees every object and module one by one (60-100 ms after a workflow
    command, for nothing the kernel does not do at exit). atexit handlers run and the standard streams
    are flushed first; while a non-daemon thread is still running, or on an uncaught exception, Python
    exits as usual."""
    import threading

    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):
        from gtd.terminal_text import write

        write(f"{code}\n", stream=sys.stderr)  # what sys.exit("message") does (control characters made visible)
        code = 1
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # as Python reports a failed flush at exit
    os._exit(code)
