"""The forbidden-tools guard's catalogs: tool names as each CLI puts them on the wire.

Interactive tools wait for a person who is not there in a headless run, so they are
forbidden. The lists are internal to gtd, never configurable: a config key could only
weaken the guard. They are enforced twice: handed to the CLI's own mechanism (by each
provider) and watched in the event stream (by the runner, which kills the process group).
The snapshot tests compare these catalogs with what the pinned CLIs actually report.
"""

from __future__ import annotations

from gtd.errors import GtdError
from gtd.exitcodes import ExitCode

# Every tool each pinned CLI is known to offer (for the snapshot tests and for mapping
# phase restrictions); the interactive subset below is what the guard forbids.
CLAUDE_TOOLS = frozenset({
    "Agent", "AskUserQuestion", "Bash", "CronCreate", "CronDelete", "CronList", "DesignSync", "Edit",
    "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep", "NotebookEdit", "Read",
    "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "Task", "TaskCreate", "TaskGet", "TaskList",
    "TaskOutput", "TaskStop", "TaskUpdate", "WebFetch", "WebSearch", "Workflow", "Write",
})
CLAUDE_INTERACTIVE = frozenset({"AskUserQuestion", "EnterPlanMode", "ExitPlanMode"})
# Tools that change files (what a read-only phase may only use on its own file).
CLAUDE_EDIT_TOOLS = frozenset({"Edit", "Write", "NotebookEdit"})

OPENCODE_TOOLS = frozenset({
    "apply_patch", "bash", "edit", "glob", "grep", "invalid", "list", "lsp", "patch", "plan_enter", "plan_exit",
    "question", "read", "skill", "task", "todoread", "todowrite", "webfetch", "websearch", "write",
})
OPENCODE_INTERACTIVE = frozenset({"question", "plan_enter", "plan_exit"})

PI_TOOLS = frozenset({"read", "bash", "edit", "write", "grep", "find", "ls"})
PI_INTERACTIVE: frozenset[str] = frozenset()

INTERACTIVE_TOOLS: dict[str, frozenset[str]] = {
    "claude": CLAUDE_INTERACTIVE,
    "opencode": OPENCODE_INTERACTIVE,
    "pi": PI_INTERACTIVE,
}
# The scripted agent can simulate any CLI, so it is held to all of their rules.
ALL_INTERACTIVE = frozenset().union(*INTERACTIVE_TOOLS.values())
INTERACTIVE_TOOLS["scripted"] = ALL_INTERACTIVE


def forbidden_tools(provider_name: str) -> frozenset[str]:
    return INTERACTIVE_TOOLS.get(provider_name, ALL_INTERACTIVE)


class ForbiddenToolUsed(GtdError):
    """The agent called a tool that can never run headless; its process group was killed."""

    exit_code = ExitCode.FORBIDDEN_TOOL


class AgentTimeout(GtdError):
    """The agent went silent for too long, or ran past the hard cap; its process group was killed."""

    exit_code = ExitCode.TIMEOUT
