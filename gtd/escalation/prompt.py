"""The interactive question: the exact request, the rules that would be saved, and the choices.

Loosening the sandbox always takes an explicit key press; an empty answer or end of input
means deny (in `gtd approve`, end of input leaves the request pending).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.panel import Panel

from gtd.escalation.decision import Decision  # re-exported: it lives apart, so a phase needs no rich
from gtd.escalation.request import EscalationRequest
from gtd.terminal_text import markup

PromptInput = Callable[[str], str]  # shows a prompt, returns the typed line


class Skip(Exception):
    """`gtd approve`: leave this request pending for later."""


KEYS = {"o": Decision.ONCE, "n": Decision.NETWORK, "p": Decision.PROJECT, "u": Decision.USER, "d": Decision.DENY}
LABELS = {"o": "allow [b]o[/b]nce", "n": "run this phase at [b]n[/b]etwork (this run)", "p": "save to [b]p[/b]roject config",
          "u": "save to [b]u[/b]ser config", "d": "[b]d[/b]eny", "s": "[b]s[/b]kip (keep pending)"}


def render(console: Console, request: EscalationRequest, repo_root: Path, *, title: str) -> None:
    """The request in a panel. Every value but gtd's own labels names what the agent chose (a path, a host,
    its tool call): it is one line, its newlines and other controls shown as escapes, and a value too long for
    the terminal wraps in its own column, indented past the labels, so no part of it can pass for a line of gtd's."""
    from rich.console import Group
    from rich.table import Table

    def grid(*rows: tuple[str, str]) -> Table:
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column(overflow="fold")
        for label, value in rows:
            table.add_row(label, value)
        return table

    project_rule = request.rule("project", repo_root).describe()
    user_rule = request.rule("user", repo_root).describe()
    review = request.review or {}
    asked_rows = [("blocked:", f"[bold]{markup(request.summary(), one_line=True)}[/bold]"),
                  ("why:", markup(request.reason, one_line=True))]
    if review:
        asked_rows.append(("[red]reviewer's verdict:[/red]",
                           f"[red]{markup(str(review.get('decision')), one_line=True)}[/red] "
                           f"({markup(str(review.get('model') or 'its default model'), one_line=True)}): "
                           f"{markup(str(review.get('reason') or ''), one_line=True)}"))
    asked = grid(*asked_rows)
    rules = grid(("[dim]project (.gtdrc.json, committed):[/dim]", markup(project_rule, one_line=True)),
                 ("[dim]user config:[/dim]", markup(user_rule, one_line=True)))
    console.print(Panel(Group(asked, "", rules), title=markup(title, one_line=True), border_style="yellow",
                        expand=False))


def ask(console: Console, request: EscalationRequest, repo_root: Path, *, allow_once: bool = True,
        allow_skip: bool = False, prompt_input: PromptInput | None = None,
        title: str = "The sandbox blocked the agent", offer_network: bool = False) -> Decision:
    """Ask until the answer is one of the keys. Raises Skip when the person skips (approve only).
    `offer_network`: the host is a package registry the network level allows, so running the phase
    at network (for this run) is one of the choices."""
    render(console, request, repo_root, title=title)
    keys = [k for k in KEYS if (allow_once or k != "o") and (offer_network or k != "n")] + (["s"] if allow_skip else [])
    console.print(" / ".join(LABELS[k] for k in keys))
    read = prompt_input or (lambda text: console.input(markup(text)))
    question = f"Decision [{'/'.join(keys)}] (default d): "
    while True:
        try:
            answer = read(question).strip().lower()
        except EOFError:  # (Ctrl-C is not an answer: it interrupts gtd)
            if allow_skip:  # `gtd approve`: no answer keeps the request pending
                console.print()
                raise Skip() from None
            console.print("\n[red]no answer: denied[/red]")
            return Decision.DENY
        if not answer:
            return Decision.DENY
        if answer[:1] in keys and (len(answer) == 1 or answer in {"once", "network", "project", "user", "deny", "skip"}):
            if answer[:1] == "s":
                raise Skip()
            return KEYS[answer[:1]]
        console.print(f"[red]please answer one of: {', '.join(keys)}[/red]")
