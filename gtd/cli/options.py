"""Options shared by the commands that run the agent, so every one of them accepts the same flags."""


from pathlib import Path
from typing import Annotated, Optional

import typer

from gtd.config.levels import Level
from gtd.cli.run_options import RunOptions  # noqa: F401 - re-exported

Provider = Annotated[Optional[str], typer.Option("--provider", "-p", help="Agent CLI: auto, scripted, claude, opencode, pi.")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Model for every phase (overrides config).")]
LevelOpt = Annotated[Optional[Level], typer.Option("--level", help="Run at this sandbox level instead of the phase's configured one (logged).")]
NonInteractive = Annotated[bool, typer.Option("--non-interactive", help="Never ask: deny escalations, save them for `gtd approve`, exit 4.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only errors.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also show the agent's text.")]
Directory = Annotated[Optional[Path], typer.Option("--directory", "-C", help="Run as if started in this directory.")]
BuildOnRed = Annotated[bool, typer.Option("--build-on-red", help="Build even when the tests are red before the "
                                          "plan's first build step (this run's baselineTests: build).")]
JsonOut = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
JsonEvents = Annotated[bool, typer.Option("--json", help="Print a JSONL event stream on stdout (one object per "
                                          "line with an \"event\" key; see the README) for CI and scripts.")]
