"""The build phase: hand the agent the next unchecked item(s), run the tests, re-prompt on
failure, then gtd itself ticks the items and commits. Bounded by a hard cap on steps."""

from __future__ import annotations

from gtd import workspace_files
from gtd.config.schema import Phase
from gtd.errors import GtdError
from gtd.prompts import render
from gtd.terminal_text import markup
from gtd.workflow import git
from gtd.workflow.context import RunContext
from gtd.workflow.phase_agent import PhaseAgent
from gtd.workflow.plan import AGENTS_FILE, read_text
from gtd.workflow.steps import Step, commit_human_edits, message
from gtd.workflow.todo import TODO_FILE, read_todo

MAX_TEST_OUTPUT_CHARS = 8000


def build_step(ctx: RunContext) -> str | None:
    """Build the next package of unchecked items. Returns the commit sha, or None if nothing is left."""
    commit_human_edits(ctx.repo)
    todo = read_todo(ctx.repo)
    if todo is None or todo.errors():
        raise GtdError(f"no valid {TODO_FILE} to build from: run `gtd plan` first")
    items = todo.unchecked()[: ctx.config.items_per_step]
    if not items:
        return None
    titles = "; ".join(item.text for item in items)
    ctx.progress.phase("build", item=titles, level=ctx.level_for(Phase.BUILD).value, provider=ctx.provider.name)
    agent = PhaseAgent(ctx, Phase.BUILD)
    test_command = ctx.config.test_command
    prompt = render("build", items="\n".join(f"- {i.text}\n  - Tests: {i.tests}" for i in items),
                    test_command=test_command or "(none configured)", todo=read_text(ctx, TODO_FILE),
                    agents=read_text(ctx, AGENTS_FILE))
    system = render("system_build")
    attempts = ctx.config.test_retries + 1
    for attempt in range(1, attempts + 1):
        agent.ask(prompt, system_prompt=system, editable_paths=None)
        if not test_command:
            break
        ctx.progress.info(f"running tests: [bold]{markup(test_command)}[/bold]")
        run = agent.run_tests(test_command)
        if run.passed:
            ctx.progress.info("[green]✓ tests pass[/green]")
            break
        ctx.progress.warn(f"tests failed (attempt {attempt} of {attempts})")
        if attempt == attempts:
            raise GtdError(f"tests still fail after {attempts} attempt(s) on: {titles}. The agent's changes are left "
                           "uncommitted for you to inspect; fix them and run `gtd` again.\n" + run.output[-2000:])
        prompt = render("build_retry", test_command=test_command, attempt=attempt, attempts=attempts,
                        test_output=run.output[-MAX_TEST_OUTPUT_CHARS:])
    current = read_todo(ctx.repo) or todo
    workspace_files.write_text(ctx.repo, TODO_FILE,
                               current.ticked([i for i in current.items if i.text in {x.text for x in items} and not i.done]))
    sha = git.commit_all(ctx.repo, message(Step.BUILD, titles))
    ctx.audit.record("step", step="build", items=[i.text for i in items], commit=sha)
    ctx.progress.info(f"[green]✓ build[/green] {markup(titles)}")
    return sha


def build(ctx: RunContext) -> int:
    """Build until no unchecked items are left, capped by `maxBuildSteps`. Returns steps done."""
    done = 0
    while done < ctx.config.max_build_steps:
        if build_step(ctx) is None:
            return done
        done += 1
    todo = read_todo(ctx.repo)
    if todo and todo.unchecked():
        ctx.progress.warn(f"stopped after maxBuildSteps={ctx.config.max_build_steps} build steps; run `gtd build` to go on")
    return done
