"""`gtd status`: what `gtd` would do next and why, read from git state. Runs nothing.

A person runs it often and scripts poll it, so it starts fast (issue 13): this module imports neither
typer nor rich nor pydantic (the config comes from the validated-load cache), and prints plain text.
gtd's entry point (gtd/cli/entry.py) calls `run` directly; the typer command calls the same `run`,
so both give the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gtd.terminal_text import visible, write_styled


def run(directory: Path | None, json_out: bool) -> None:
    """Print the prediction for the repository around `directory` (default: the current one)."""
    from gtd.cli.context import load_at
    from gtd.errors import NotARepository
    from gtd.workflow import testcmd
    from gtd.workflow.steps import predict

    cwd = (directory or Path.cwd()).resolve()
    loaded = load_at(cwd, {})  # its warnings are printed through rich: rare, and then worth the import
    if loaded.repo_root is None:
        raise NotARepository(cwd)
    from gtd import runlock

    result = predict(loaded.repo_root)
    running = runlock.holder(loaded.repo_root)  # read only: status never waits for, nor takes, the run lock
    result["running"] = None if running is None else {**running, "described": runlock.describe(running)}
    from gtd.pending_requests import describe_plain, read_plain

    result["pending_approvals"] = [{**request, "described": describe_plain(request)}
                                   for request in read_plain(loaded.repo_root)]
    tests = testcmd.resolve(loaded.values.get("testCommand"), loaded.repo_root)  # values: no pydantic models
    result["test_command"] = {"command": tests.command, "source": tests.source or None}
    write_styled([(render_json(result), None)] if json_out else render_text(result, tests.describe()))


def render_json(result: dict[str, Any]) -> str:
    """Pure ASCII (a C1 control or bidi character is written as its \\u escape, never raw)."""
    return json.dumps(result, indent=2, ensure_ascii=True) + "\n"


def render_text(result: dict[str, Any], tests: str) -> list[tuple[str, str | None]]:
    """The prediction for a person, as (text, style) segments. Text gtd did not write (subjects,
    paths, reasons naming them) is kept on its line, control characters shown as escapes: a file
    name holding a newline cannot forge a line of its own."""

    def line(name: str, *rest: tuple[str, str | None]) -> list[tuple[str, str | None]]:
        return [(f"{name}:", "bold"), *((visible(text, one_line=True), style) for text, style in rest), ("\n", None)]

    out = []
    running = result.get("running")
    if running:
        out += line("running", (f" another gtd run is working in this repository: {running['described']}", None))
    approvals = result.get("pending_approvals") or []
    if approvals:
        out += line("approvals", (f" {len(approvals)} pending from a run without a terminal (exit 4): run "
                                  "`gtd approve` in a terminal to decide them, then gtd again", None))
        for request in approvals[:10]:
            out += [("  - ", None), (visible(_clip(f"{request['described']}: {request.get('reason', '')}"), one_line=True),
                                     None), ("\n", None)]
        if len(approvals) > 10:
            out += [(f"  … and {len(approvals) - 10} more (`gtd approve --list`)\n", None)]
    out += line("next", (f" {result['next']}", None))
    out += line("why", (f" {result['reason']}  ", None), (f"(rule: {result['rule']})", "dim"))
    commit = result.get("commit")
    if commit:
        out += line("from commit", (f" {commit['sha'][:10]} {commit['subject']}", None))
    work = result.get("agent_work")
    if work:
        paths = work["paths"]
        out += line("agent's work", (f" {', '.join(paths[:10])}{' …' if len(paths) > 10 else ''} -> {work['what']}",
                                     None))
    pending = result.get("pending_edits")
    if pending:
        paths = pending["paths"]
        out += line("uncommitted", (f" {', '.join(paths[:10])}{' …' if len(paths) > 10 else ''} -> {pending['what']}",
                                    None))
    return out + line("tests", (f" {tests}", None))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
