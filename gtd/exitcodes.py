"""Process exit codes: documented in README, relied on by scripts and CI."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1  # a phase failed: tests still red, agent error, plan invalid after retries
    USAGE = 2  # bad command line or invalid config
    SANDBOX_UNAVAILABLE = 3  # sandbox enabled but cannot start (gtd never runs unsandboxed)
    ESCALATION_PENDING = 4  # headless run hit the boundary; pending requests printed as JSON
    FORBIDDEN_TOOL = 5  # the agent called an interactive/forbidden tool and was stopped
    TIMEOUT = 6  # agent inactivity or hard run timeout
    BUSY = 7  # another gtd run holds this repository's lock
    INTERRUPTED = 130  # Ctrl-C
