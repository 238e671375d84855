"""The options of the commands that run the agent, as one value (no typer: `gtd plan` and `gtd build` are
parsed without it when their command line is plain, cli/entry.py)."""

from __future__ import annotations

from pathlib import Path

from gtd.config.levels import Level
from gtd.record import record


@record
class RunOptions:
    provider: str | None = None
    model: str | None = None
    level: Level | None = None
    non_interactive: bool = False
    quiet: bool = False
    verbose: bool = False
    directory: Path | None = None
    json: bool = False  # --json: JSONL events on stdout
    build_on_red: bool = False  # --build-on-red: baselineTests `build` for this run
    demo: bool = False  # `gtd demo`: the scripted provider may play its built-in demo script

    @property
    def verbosity(self) -> int:
        return -1 if self.quiet else (1 if self.verbose else 0)

    def config_flags(self) -> dict:
        """The command-line layer of the config."""
        flags = config_flags(self.provider, self.model)
        if self.build_on_red:
            flags["baselineTests"] = "build"
        return flags

    def merged(self, before: "RunOptions | None") -> "RunOptions":
        """These options (given after the subcommand) combined with those given before it
        (`gtd -p scripted plan`). The same option given twice with different values is an error."""
        if before is None:
            return self
        from gtd.errors import GtdError
        from gtd.exitcodes import ExitCode

        values = {}
        for name in (f.name for f in self.__record_fields__):
            mine, theirs = getattr(self, name), getattr(before, name)
            if mine not in (None, False) and theirs not in (None, False) and mine != theirs:
                raise GtdError(f"--{name.replace('_', '-')} is given twice with different values ({theirs} before the "
                               f"command, {mine} after it): give it once", exit_code=ExitCode.USAGE)
            values[name] = mine if mine not in (None, False) else theirs
        return RunOptions(**values)

    def cwd(self) -> Path:
        return (self.directory or Path.cwd()).resolve()


def config_flags(provider: str | None, model: str | None) -> dict:
    """The command-line layer of the config: --provider, and --model for every phase."""
    flags: dict = {}
    if provider:
        flags["provider"] = provider
    if model:
        flags["models"] = {"plan": model, "build": model, "learn": model}
    return flags
