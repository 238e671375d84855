"""Options shared by the commands that run the agent, so every one of them accepts the same flags."""


from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Optional

import typer

from gtd.config.levels import Level

Provider = Annotated[Optional[str], typer.Option("--provider", "-p", help="Agent CLI: auto, scripted, claude, opencode, pi.")]
Model = Annotated[Optional[str], typer.Option("--model", "-m", help="Model for every phase (overrides config).")]
LevelOpt = Annotated[Optional[Level], typer.Option("--level", help="Run at this sandbox level instead of the phase's configured one (logged).")]
NonInteractive = Annotated[bool, typer.Option("--non-interactive", help="Never ask: deny escalations, save them for `gtd approve`, exit 4.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Only errors.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Also show the agent's text.")]
Directory = Annotated[Optional[Path], typer.Option("--directory", "-C", help="Run as if started in this directory.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]
JsonEvents = Annotated[bool, typer.Option("--json", help="Print a JSONL event stream on stdout (one object per "
                                          "line with an \"event\" key; see the README) for CI and scripts.")]


@dataclass
class RunOptions:
    provider: str | None = None
    model: str | None = None
    level: Level | None = None
    non_interactive: bool = False
    quiet: bool = False
    verbose: bool = False
    directory: Path | None = None
    json: bool = False  # --json: JSONL events on stdout

    @property
    def verbosity(self) -> int:
        return -1 if self.quiet else (1 if self.verbose else 0)

    def config_flags(self) -> dict:
        """The command-line layer of the config."""
        from gtd.cli.context import config_flags

        return config_flags(self.provider, self.model)

    def merged(self, before: "RunOptions | None") -> "RunOptions":
        """These options (given after the subcommand) combined with those given before it
        (`gtd -p scripted plan`). The same option given twice with different values is an error."""
        if before is None:
            return self
        from gtd.errors import GtdError
        from gtd.exitcodes import ExitCode

        values = {}
        for name in self.__dataclass_fields__:
            mine, theirs = getattr(self, name), getattr(before, name)
            if mine not in (None, False) and theirs not in (None, False) and mine != theirs:
                raise GtdError(f"--{name.replace('_', '-')} is given twice with different values ({theirs} before the "
                               f"command, {mine} after it): give it once", exit_code=ExitCode.USAGE)
            values[name] = mine if mine not in (None, False) else theirs
        return RunOptions(**values)

    def cwd(self) -> Path:
        return (self.directory or Path.cwd()).resolve()
