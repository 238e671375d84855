"""The interactive question: the exact request, the rule that would be saved, four choices."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.prompt import Prompt

from gtd.escalation.request import EscalationRequest


class Decision(str, Enum):
    ONCE = "once"  # allow for the rest of this run only
    PROJECT = "project"  # save the rule to .gtdrc.json (committed, shared with the team)
    USER = "user"  # save the rule to the user config
    DENY = "deny"


KEYS = {"o": Decision.ONCE, "p": Decision.PROJECT, "u": Decision.USER, "d": Decision.DENY}


def ask(console: Console, request: EscalationRequest, repo_root: Path, *, allow_once: bool = True) -> Decision:
    project_rule = request.rule("project", repo_root).describe()
    user_rule = request.rule("user", repo_root).describe()
    body = (f"[bold]{escape(request.summary())}[/bold]\n"
            f"why: {escape(request.reason)}\n\n"
            f"[dim]save to project (.gtdrc.json, committed):[/dim] {escape(project_rule)}\n"
            f"[dim]save to user config:[/dim] {escape(user_rule)}")
    console.print(Panel(body, title="The sandbox blocked the agent", border_style="yellow"))
    keys = [k for k in KEYS if allow_once or k != "o"]
    labels = {"o": "allow [b]o[/b]nce", "p": "save to [b]p[/b]roject", "u": "save to [b]u[/b]ser", "d": "[b]d[/b]eny"}
    console.print(" / ".join(labels[k] for k in keys))
    answer = Prompt.ask("Decision", choices=keys, default="d", console=console, show_default=True)
    return KEYS[answer]
