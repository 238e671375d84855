"""Running the workflow for a command (`gtd`, `gtd plan`, `gtd build`, `gtd learn`): the RunContext, and
how a phase that stops early ends the command. No typer: cli/entry.py runs plain command lines directly."""

from __future__ import annotations

import json
from contextlib import contextmanager

from gtd.cli.context import run_context, stdout
from gtd.cli.run_options import RunOptions
from gtd.errors import GtdError, Interrupted
from gtd.exitcodes import ExitCode

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterator


@contextmanager
def workflow(options: RunOptions) -> Iterator:
    """A RunContext for the workflow commands. Headless escalations end the command with exit 4
    and JSON on stdout; whatever stops a phase early leaves the agent's changes uncommitted and
    remembered as the agent's (see gtd.workflow.leftovers)."""
    from gtd.workflow import leftovers
    from gtd.workflow.phase_agent import EscalationPending
    from gtd.workflow.unsafe import UnsafeFiles

    from gtd.runlock import RepositoryBusy

    try:
        ctx = run_context(options)
    except RepositoryBusy as exc:  # exit 7; --json readers get it as an event too
        if options.json:
            from gtd.terminal_text import write

            write(json.dumps({"event": "run_end", "status": "busy", "exit_code": int(exc.exit_code),
                              "holder": exc.holder, "error": str(exc)}, ensure_ascii=True) + "\n")
        raise
    try:  # the repository's run lock (gtd.runlock) is released last, after the clean-up below
        try:
            yield ctx
        except EscalationPending:
            leftovers.stopped(ctx.repo, "escalation pending")
            pending = [request.model_dump(mode="json") for request in ctx.escalator.headless_denied]
            ctx.progress.warn(f"{len(pending)} escalation request(s) denied (no terminal); saved for `gtd approve`")
            ctx.progress.finish("escalation_pending", ExitCode.ESCALATION_PENDING, requests=pending)
            if not options.json:  # with --json the run_end event carries the requests
                stdout.print_json(json.dumps({"status": "escalation_pending", "requests": pending,
                                              "hint": "run `gtd approve` in a terminal, then run gtd again"}))
            raise SystemExit(int(ExitCode.ESCALATION_PENDING)) from None
        except UnsafeFiles as exc:
            ctx.audit.record("unsafe_untracked", files=[e.to_json() for e in exc.entries])
            if not ctx.escalator.interactive:
                stdout.print_json(json.dumps({"status": "unsafe_untracked_files", "files": [e.to_json() for e in exc.entries],
                                              "hint": "add them to .gitignore or `git add` them yourself, then run gtd again"}))
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Terminated: its own exit code)
            code = int(getattr(exc, "exit_code", ExitCode.INTERRUPTED))
            ctx.audit.record("interrupted")
            leftovers.stopped(ctx.repo, "interrupted")
            ctx.progress.finish("interrupted", code)
            raise Interrupted("interrupted: the agent and its processes were stopped; the step was not committed "
                              "(its partial changes are left uncommitted in the work tree, and the next run carries "
                              "them on)", exit_code=code) from None
        except GtdError as exc:
            if exc.exit_code != ExitCode.USAGE:
                leftovers.stopped(ctx.repo, str(exc)[:200])
            ctx.progress.finish("failed", int(exc.exit_code), error=str(exc))
            raise
        except BaseException:
            ctx.progress.finish("failed", ExitCode.FAILURE)
            raise
        else:
            ctx.progress.finish("ok", ExitCode.OK)
    finally:
        if ctx.run_lock is not None:
            ctx.run_lock.release()


def next_step(options: RunOptions, run_all: bool, *, single: bool = False) -> None:
    """`gtd`: one step; `--all` until blocked; `--single` stops after committing the person's edits
    when there were any (the original gtd's --single: no chaining to the next step)."""
    from gtd.workflow.engine import run_next, run_until_blocked

    with workflow(options) as ctx:
        if run_all:
            run_until_blocked(ctx, max_steps=ctx.config.max_build_steps + 4)
        else:
            run_next(ctx, stop_after_edits=single)


def run_phase(options: RunOptions, command: str, *, goal: str | None = None, one: bool = False) -> None:
    """`gtd plan [GOAL]`, `gtd build [--one]` or `gtd learn`, however the command line was parsed
    (typer's commands in cli/workflow_cmds.py, or the fast parser in cli/entry.py)."""
    if command == "plan":  # its first commit formats TODO.md: mdformat loads meanwhile, from the start
        from gtd.workflow import markdown

        markdown.prepare_in_background()
    with workflow(options) as ctx:
        if command == "plan":
            from gtd.workflow.plan import plan

            plan(ctx, goal)
        elif command == "build":
            from gtd.workflow.build import build, build_step

            if not (build_step(ctx) if one else build(ctx)):  # a silent exit 0 would read as "built"
                ctx.progress.info("nothing to build: every item in TODO.md is checked; `gtd learn` is next "
                                  "(`gtd status` says why)")
        else:
            from gtd.workflow.learn import learn

            learn(ctx)
