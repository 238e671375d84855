"""Errors that the CLI turns into a clear message and an exit code."""

from gtd.exitcodes import ExitCode


class GtdError(Exception):
    """Base error: carries the exit code the CLI should use."""

    exit_code: ExitCode | int = ExitCode.FAILURE

    def __init__(self, message: str, *, exit_code: ExitCode | int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class NotARepository(GtdError):
    """gtd works on a git repository (git is its state): the one message every command gives outside one."""

    exit_code = ExitCode.USAGE

    def __init__(self, path):
        super().__init__(f"{path} is not inside a git repository: run `git init` first (gtd keeps its state in git)")


class ConfigError(GtdError):
    """Invalid configuration: always names the file, the key and the reason."""

    exit_code = ExitCode.USAGE

    def __init__(self, file: str, key: str, reason: str):
        self.file, self.key, self.reason = file, key, reason
        where = f"{file}: {key}" if key else file
        super().__init__(f"invalid config {where}: {reason}")


class SandboxUnavailable(GtdError):
    """The sandbox is enabled but cannot start; gtd refuses to run unsandboxed."""

    exit_code = ExitCode.SANDBOX_UNAVAILABLE


class Interrupted(GtdError):
    """Ctrl-C: the agent and its processes were stopped and nothing was committed."""

    exit_code = ExitCode.INTERRUPTED


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (`kill`, the terminal closed, a cancelled CI job). A KeyboardInterrupt, so that
    every clean-up written for Ctrl-C runs for it too (the agent tree stopped, the sandbox's plants
    quarantined, the phase's changes remembered as the agent's); gtd then exits 128 + the signal's
    number, as a process the signal ended would, where Ctrl-C exits 130."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.exit_code = 128 + signum
