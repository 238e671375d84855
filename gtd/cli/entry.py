"""The `gtd` console script. `gtd sandbox run` is answered without building the typer command tree
(cli/sandbox_run.py: typer and click cost more than its whole start-up budget); every other
invocation, and any `sandbox run` the fast parser does not recognise, goes to the full CLI."""

from __future__ import annotations

import sys


def main() -> None:
    from gtd.cli.sandbox_run import fast_main

    code = fast_main(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from gtd.cli.app import main as full_main

    full_main()
