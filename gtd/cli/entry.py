"""The `gtd` console script. The commands run most often are answered without building the typer
command tree (typer and click cost more than their whole start-up budget, issue 13):

    gtd sandbox run ...                       cli/sandbox_run.py (fast_main parses its options)
    gtd [-C DIR] status [--json] [-C DIR]     cli/status_cmd.py

Every other invocation, and any of these the fast parsers do not recognise exactly (help, a typo,
Tab completion), goes to the full CLI (cli/app.py), which runs the same code after typer parsed it.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

_DIRECTORY = ("-C", "--directory")


def _options(args: list[str], flags: tuple[str, ...]) -> dict[str, str | bool] | None:
    """`args` as {option: value}: `-C DIR`, `--directory DIR`, `--directory=DIR` and the given flags,
    each at most once; None for anything else (typer then parses it and says what is wrong)."""
    found: dict[str, str | bool] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--directory="):
            name, value = "-C", arg.split("=", 1)[1]
        elif arg in _DIRECTORY:
            if i + 1 == len(args):
                return None
            name, value = "-C", args[i + 1]
            i += 1
        elif arg in flags:
            name, value = arg, True
        else:
            return None
        if name in found or value == "" or (isinstance(value, str) and value.startswith("-")):
            return None
        found[name] = value
        i += 1
    return found


def _fast_status(argv: list[str]) -> Callable[[], None] | None:
    """`gtd status` for this command line, or None when typer must parse it."""
    if "status" not in argv or any(key.endswith("_COMPLETE") for key in os.environ):
        return None
    at = argv.index("status")
    before, after = _options(argv[:at], ()), _options(argv[at + 1:], ("--json",))
    if before is None or after is None:
        return None

    def status() -> None:
        from pathlib import Path

        from gtd.cli.status_cmd import run

        if "-C" in before:  # like the root option: every subcommand runs as if started there
            _chdir(Path(str(before["-C"])))
        run(Path(str(after["-C"])) if "-C" in after else None, bool(after.get("--json")))

    return status


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
    except KeyboardInterrupt:
        write_styled([("\n", None), ("interrupted", "yellow"), ("\n", None)], stream=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.OK)


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["sandbox"]:
        from gtd.cli.sandbox_run import fast_main

        code = fast_main(argv)
        if code is not None:
            sys.exit(code)
    status = _fast_status(argv)
    if status is not None:
        sys.exit(_run_fast(status))
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
        print(code, file=sys.stderr)  # what sys.exit("message") does
        code = 1
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # as Python reports a failed flush at exit
    os._exit(code)
