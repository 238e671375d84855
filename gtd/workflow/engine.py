"""`gtd` with no subcommand: infer the next step from git state and run it."""

from __future__ import annotations

from gtd.config.levels import Phase
from gtd.terminal_text import markup
from gtd.workflow import git, testcmd
from gtd.workflow.build import build_step, check_tests
from gtd.workflow.context import RunContext
from gtd.workflow.learn import cleanup, learn
from gtd.workflow.plan import plan
from gtd.workflow.steps import HumanEdits, Inference, Next, Step, commit_human_edits, infer_next
from gtd.workflow.todo import TODO_FILE, read_todo


def check_fix(ctx: RunContext, edits: HumanEdits | None) -> None:
    """A person's fix with no unbuilt items left is checked: red tests stop with exit 1."""
    if edits is None or edits.step != Step.FIX or not [p for p in edits.fix_paths if p != TODO_FILE]:
        return
    todo = read_todo(ctx.repo)
    if todo is not None and todo.unchecked():
        return  # the next build step runs the tests anyway
    tests = testcmd.resolve(ctx.config.test_command, ctx.repo)
    if tests.command is None:
        ctx.progress.warn("your fix is committed but NOT tested: no test command is configured (`testCommand`) "
                          "and none was detected")
        return
    from gtd.workflow.phase_agent import PhaseAgent

    check_tests(ctx, PhaseAgent(ctx, Phase.BUILD), tests, "after your fix")


def _fix_at_head(ctx: RunContext) -> HumanEdits | None:
    """A fix commit (🔧, or the original gtd's 👷) at HEAD that nothing has checked since."""
    from gtd.workflow.steps import step_of_subject

    entries = git.log(ctx.repo, limit=1)
    if not entries or step_of_subject(entries[0][1]) != Step.FIX:
        return None
    files = [line.split("\t", 1)[-1] for line in git.commit_files(ctx.repo, entries[0][0])]
    return HumanEdits(Step.FIX, files, False, fix_paths=files)


def run_next(ctx: RunContext, *, stop_after_edits: bool = False) -> Inference:
    """Commit the person's edits, then run exactly one step. Returns what was inferred. A fix with
    nothing left to build (just committed, or found at HEAD) is checked by the tests first.
    `stop_after_edits` (--single): when there were edits to commit, committing them is the step."""
    edits = commit_human_edits(ctx.repo, ctx.progress)
    if edits is not None and stop_after_edits:
        inference = infer_next(ctx.repo)
        ctx.audit.record("next_step", next="stop", reason="--single: the edits were committed", rule="single")
        ctx.progress.info(f"committed your edits (--single): next is {inference.next.value}; run `gtd` to go on")
        return inference
    check_fix(ctx, edits or _fix_at_head(ctx))
    inference = infer_next(ctx.repo)
    ctx.audit.record("next_step", next=inference.next.value, reason=inference.reason, rule=inference.rule)
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


def _state(ctx: RunContext) -> tuple[str, bool]:
    return git.git(ctx.repo, "rev-parse", "HEAD", check=False).strip(), bool(git.changes(ctx.repo))


def run_until_blocked(ctx: RunContext, max_steps: int) -> list[Inference]:
    """Keep taking next steps until the workflow is idle or needs a person (bounded). A step that
    changed nothing at all stops the loop: running it again would do the same."""
    done = []
    for _ in range(max_steps):
        before = _state(ctx)
        inference = run_next(ctx)
        done.append(inference)
        if inference.next in (Next.IDLE, Next.ANSWER_QUESTIONS, Next.CLEANUP):
            break
        if _state(ctx) == before:
            ctx.progress.warn(f"stopping: the {inference.next.value} step changed nothing, so repeating it would not "
                              f"help ({inference.reason})")
            break
    return done
