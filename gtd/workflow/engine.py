"""`gtd` with no subcommand: infer the next step from git state and run it."""

from __future__ import annotations

from gtd.terminal_text import markup
from gtd.workflow.build import build_step
from gtd.workflow.context import RunContext
from gtd.workflow.learn import cleanup, learn
from gtd.workflow.plan import plan
from gtd.workflow.steps import Inference, Next, commit_human_edits, infer_next


def run_next(ctx: RunContext) -> Inference:
    """Commit the person's edits, then run exactly one step. Returns what was inferred."""
    commit_human_edits(ctx.repo)
    inference = infer_next(ctx.repo)
    ctx.audit.record("next_step", next=inference.next.value, reason=inference.reason)
    if inference.next == Next.PLAN:
        plan(ctx)
    elif inference.next == Next.BUILD:
        build_step(ctx)
    elif inference.next == Next.LEARN:
        learn(ctx)
    elif inference.next == Next.CLEANUP:
        cleanup(ctx)
    else:
        ctx.progress.info(markup(inference.reason))
    return inference


def run_until_blocked(ctx: RunContext, max_steps: int) -> list[Inference]:
    """Keep taking next steps until the workflow is idle or needs a person (bounded)."""
    done = []
    for _ in range(max_steps):
        inference = run_next(ctx)
        done.append(inference)
        if inference.next in (Next.IDLE, Next.ANSWER_QUESTIONS, Next.CLEANUP):
            break
    return done
