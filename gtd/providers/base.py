"""The provider interface: what gtd needs from any agent CLI.

A provider only *describes* how to run its CLI (argv, env, stdin) and how to read
its output; running it (inside the sandbox, with timeouts and the forbidden-tools
guard) is done once for all providers by `gtd.providers.runner`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import Path

from gtd.config.levels import Phase
from gtd.record import field, record
from gtd.sandbox.policy.needs import SandboxNeeds  # noqa: F401 - each provider builds its own
from gtd.which import which

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from gtd.providers.events import AgentEvent  # annotations only: `gtd sandbox run` parses no agent output


@record
class AgentRequest:
    """One prompt for the agent in one phase."""

    phase: Phase
    prompt: str
    cwd: Path
    system_prompt: str | None = None
    model: str | None = None
    resume_session: str | None = None
    # Phase tool restriction, mapped onto the CLI's own mechanism where it can express it:
    # None = the agent may edit anything in the workspace; a list = only these paths
    # (relative to cwd), e.g. ["TODO.md"] in plan. The OS sandbox stays the real boundary.
    editable_paths: list[str] | None = None
    # False: a one-shot answer with no tools at all, under this system prompt alone (the escalation reviewer,
    # gtd/escalation/reviewer.py). Only providers with `answers_without_tools` can run such a request.
    tools: bool = True


@record
class CommandSpec:
    """How to start the CLI for one request."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # on top of the sandbox's minimal env
    stdin_data: bytes | None = None  # None means stdin is /dev/null


@record
class AgentOutcome:
    """The honest verdict on a finished run, from exit status *and* stream."""

    ok: bool
    error: str | None = None
    session_id: str | None = None


# Compiled at first use (by re's cache): only a failed agent run's error is searched.
_NOT_LOGGED_IN = r"not logged in|/login|invalid api key|api key|authenticat|unauthori[sz]ed|\b401\b"


class Provider(ABC):
    name: str
    executable: str
    # Tool names as they appear on the wire that must never run headless. Internal, not configurable.
    forbidden_tools: frozenset[str] = frozenset()
    # Whether a tool call's event comes before the tool runs. If not (opencode: only when it ends), the
    # runner looks at the agent's process tree for a tool at work before calling silence inactivity.
    announces_tool_start: bool = True
    # Whether the CLI can run a request with tools=False (every tool switched off by its own flag).
    answers_without_tools: bool = False

    def executable_path(self) -> str | None:
        return which(self.executable)

    def is_installed(self) -> bool:
        return self.executable_path() is not None

    def host_executable(self) -> str | None:
        """The CLI gtd runs on the host (its `--version`): never one from the repository's PATH dirs, so
        it may differ from executable_path(), the first on PATH."""
        from gtd.host_programs import host_program

        return host_program(self.executable)

    def version(self) -> str | None:
        from gtd.providers.version import cli_version

        path = self.host_executable()
        return cli_version(path) if path else None

    # Model per phase from gtd's config (`models.<phase>`; None: the CLI's own default), set by the registry.
    models: dict[str, str | None] = {}

    def for_review(self) -> "Provider":
        """The provider the escalation reviewer runs: one whose state cannot disturb the agent's run."""
        return self

    @abstractmethod
    def sandbox_needs(self, workspace: Path | None = None) -> SandboxNeeds:
        """`workspace`: files there are never read as the person's own settings."""

    @abstractmethod
    def command(self, request: AgentRequest) -> CommandSpec: ...

    @abstractmethod
    def parse_line(self, line: str) -> list[AgentEvent]: ...

    @abstractmethod
    def outcome(self, exit_code: int, events: list[AgentEvent]) -> AgentOutcome: ...

    def parse_stderr_line(self, line: str) -> list[AgentEvent]:
        """Events in one line of the CLI's stderr (opencode logs its failed API requests there).
        Most CLIs: none; stderr is then only kept for the error message."""
        return []

    # How a person logs this CLI in (shown when its error says it is not logged in).
    login_hint: str = ""

    def explain_error(self, error: str | None) -> str | None:
        """The CLI's error, plus how to log in when it is an authentication failure."""
        if error and self.login_hint and re.search(_NOT_LOGGED_IN, error, re.IGNORECASE):
            return f"{error}. Not logged in? {self.login_hint}"
        return error
