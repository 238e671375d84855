"""`gtd approve`, `gtd audit`, `gtd trust`."""


import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from gtd.cli import options as opt
from gtd.cli.context import stderr, stdout
from gtd.errors import GtdError, NotARepository
from gtd.exitcodes import ExitCode
from gtd.terminal_text import markup, visible


def _repo(directory: Path | None) -> Path:
    from gtd.config.loader import find_repo_root

    cwd = (directory or Path.cwd()).resolve()
    root = find_repo_root(cwd)
    if root is None:
        raise NotARepository(cwd)
    return root


def approve(
    list_only: Annotated[bool, typer.Option("--list", help="Only list the pending requests.")] = False,
    json_out: opt.JsonOut = False,
    directory: opt.Directory = None,
) -> None:
    """Walk through requests that headless runs had to deny: save each to the project or user config, deny or skip it.

    Examples:

    
      gtd approve
      gtd approve --list
      gtd approve --json
    """
    from gtd.audit import AuditLog
    from gtd.escalation import prompt
    from gtd.escalation.escalator import (BY_PATH_CHECK, BY_SAVED_RULE, BY_USER, is_interactive, save_rule,
                                          saved_rule_scope, unsafe_path_reason)
    from gtd.escalation.pending import PendingStore

    repo = _repo(directory)
    store = PendingStore(repo)
    pending = store.list()
    if json_out:
        stdout.print_json(json.dumps({"pending": [r.model_dump(mode="json") for r in pending]}))
        return
    if list_only or not pending:
        if not pending:
            stderr.print("no pending escalation requests")
        for request in pending:
            stdout.print(f"{markup(request.id)}  {markup(request.summary(), one_line=True)}  "
                         f"[dim]{markup(request.reason, one_line=True)}[/dim]", highlight=False)
        return
    if not is_interactive(False):
        raise GtdError("`gtd approve` needs a terminal to ask you; use `gtd approve --list` or `--json` to see requests",
                       exit_code=ExitCode.USAGE)
    audit = AuditLog(repo)
    for number, request in enumerate(pending, 1):
        unsafe = unsafe_path_reason(request, repo)
        if unsafe is not None:  # the path is not where it is spelled (any more): nobody may grant it
            stderr.print(f"[red]not grantable, removed:[/red] {markup(unsafe, one_line=True)}")
            audit.record("escalation_decision", id=request.id, target=request.target, decision="deny",
                         decided_by=BY_PATH_CHECK, reason=unsafe, via="gtd approve")
            store.remove(request.id)
            continue
        scope = saved_rule_scope(request, repo)
        if scope is not None:  # approved meanwhile (another run, another terminal)
            stderr.print(f"already allowed by a saved {scope} rule: {markup(request.summary(), one_line=True)}")
            audit.record("escalation_decision", id=request.id, target=request.target, decision=scope,
                         decided_by=BY_SAVED_RULE, via="gtd approve")
            store.remove(request.id)
            continue
        try:
            decision = prompt.ask(stderr, request, repo, allow_once=False, allow_skip=True,
                                  title=f"Pending request {number} of {len(pending)}")
        except prompt.Skip:
            stderr.print("skipped: still pending")
            continue
        fields: dict = {}
        if decision in (prompt.Decision.PROJECT, prompt.Decision.USER):
            saved = save_rule(request, decision.value, repo)
            fields = {"rule": saved.rule, "saved_to": str(saved.path), "commit": saved.commit}
            stderr.print(f"saved {markup(saved.rule, one_line=True)} to {markup(str(saved.path), one_line=True)}"
                         + (f" (commit {saved.commit[:10]})" if saved.commit else ""))
            if saved.warning:
                stderr.print(f"[yellow]warning:[/yellow] {markup(saved.warning, one_line=True)}")
        else:
            stderr.print("denied")
        audit.record("escalation_decision", id=request.id, target=request.target, decision=decision.value,
                     decided_by=BY_USER, via="gtd approve", **fields)
        store.remove(request.id)


def audit(
    json_out: opt.JsonOut = False,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=0,
                                                 help="Only the last N entries (0 = all; default 50, all with --json).")] = None,
    directory: opt.Directory = None,
) -> None:
    """Show the project's audit log: runs, levels, violations, escalations and who decided them.

    Examples:

    
      gtd audit -n 20
      gtd audit --json | jq '.[] | select(.event == "violation")'
    """
    from gtd.audit import AuditLog

    entries = AuditLog(_repo(directory)).read()
    if limit is None:
        limit = 0 if json_out else 50
    if limit:
        entries = entries[-limit:]
    if json_out:
        stdout.print_json(json.dumps(entries))
        return
    if not stdout.is_terminal:  # a file, a pipe: one line per entry, never folded at 80 columns
        import sys

        from gtd.cli.config_show import columns
        from gtd.terminal_text import write

        rows = [[str(entry.get("time", ""))[:19], visible(entry.get("event", ""), one_line=True),
                 visible(" ".join(f"{k}={v}" for k, v in entry.items() if k not in ("time", "event")), one_line=True)]
                for entry in entries]
        write(columns(["time", "event", "details"], rows, sys.stdout))
        return
    from rich.table import Table

    table = Table(box=None, show_header=True, header_style="bold")
    table.add_column("time", no_wrap=True)
    table.add_column("event", no_wrap=True)
    table.add_column("details", overflow="fold")  # a refused path or host is the point: never cut it
    for entry in entries:
        details = " ".join(f"{k}={v}" for k, v in entry.items() if k not in ("time", "event"))
        table.add_row(markup(str(entry.get("time", ""))[:19]), markup(entry.get("event", ""), one_line=True),
                      markup(details, one_line=True))
    stdout.print(table, highlight=False)


def trust(
    show: Annotated[bool, typer.Option("--show", help="Show what loosens the sandbox and whether it is trusted.")] = False,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting the project config.")] = False,
    directory: opt.Directory = None,
) -> None:
    """Trust this exact .gtdrc.json: its entries that loosen the sandbox apply until the file changes.

    Examples:

    
      gtd trust --show   # what loosens the sandbox, and whether it is trusted
      gtd trust
    """
    from gtd.config.files import config_from_text, decode_config_bytes
    from gtd.escalation.trust import TrustStore, content_digest, loosening_entries
    from gtd.paths import PROJECT_CONFIG_NAME

    from gtd import workspace_files

    root = _repo(directory)
    path = root / PROJECT_CONFIG_NAME
    try:
        # Read once: what is shown is what is pinned. A sandboxed agent may rewrite a .gtdrc.json it
        # created during its run (only one present at its start is read-only), between two readings.
        data = workspace_files.read_bytes(root, PROJECT_CONFIG_NAME)
    except workspace_files.UnsafeWorkspacePath as exc:
        raise GtdError(str(exc), exit_code=ExitCode.USAGE) from None
    if data is None:
        raise GtdError(f"{path} does not exist", exit_code=ExitCode.USAGE)
    store = TrustStore()
    loosening = loosening_entries(config_from_text(path, decode_config_bytes(path, data) or ""))
    if show:
        trusted = store.is_trusted(path)
        state = "trusted" if trusted else ("changed since you trusted it" if store.pinned(path) else "NOT trusted")
        stdout.print(f"{markup(str(path))}: {state}")
        approved = store.approved(path)
        for entry in loosening:
            honoured = "honoured" if trusted or entry in approved else "ignored"
            how = " (approved at a prompt)" if entry in approved and not trusted else ""
            stdout.print(f"  loosens: {markup(entry)}  " + markup(f"[{honoured}{how}]"), highlight=False)
        if not loosening:
            stdout.print("  nothing in it loosens the sandbox")
        return
    if revoke:
        store.revoke(path)
        stderr.print(f"no longer trusted: {markup(str(path))}")
        return
    for entry in loosening:
        stderr.print(f"  trusting: {markup(entry)}")
    digest = store.trust(path, content_digest(data))
    stderr.print(f"trusted {markup(str(path))} (sha256 {digest[:12]}…); any change needs `gtd trust` again")


def register(app: typer.Typer) -> None:
    app.command("approve")(approve)
    app.command("audit")(audit)
    app.command("trust")(trust)
