"""The learn phase: the agent merges the plan's learnings into AGENTS.md; then cleanup removes TODO.md."""

from __future__ import annotations

from gtd import workspace_files
from gtd.config.schema import Phase
from gtd.prompts import render
from gtd.workflow import git
from gtd.workflow.context import RunContext
from gtd.workflow.phase_agent import PhaseAgent
from gtd.workflow.plan import AGENTS_FILE, read_text
from gtd.workflow.steps import Step, commit_human_edits, message
from gtd.workflow.todo import TODO_FILE, read_todo


def learn(ctx: RunContext) -> str | None:
    commit_human_edits(ctx.repo)
    todo = read_todo(ctx.repo)
    title = (todo.title if todo else None) or "plan"
    learnings = todo.learnings if todo else []
    sha = None
    if learnings:
        ctx.progress.phase("learn", level=ctx.level_for(Phase.LEARN).value, provider=ctx.provider.name)
        agent = PhaseAgent(ctx, Phase.LEARN)
        agent.ask(render("learn", title=title, learnings="\n".join(learnings), agents=read_text(ctx, AGENTS_FILE)),
                  system_prompt=render("system_learn"), editable_paths=[AGENTS_FILE])
        sha = git.commit_all(ctx.repo, message(Step.LEARN, title))
        ctx.audit.record("step", step="learn", commit=sha)
        ctx.progress.info(f"[green]✓ learn[/green] {len(learnings)} learning(s) merged into {AGENTS_FILE}")
    else:
        sha = git.commit_all(ctx.repo, message(Step.LEARN, f"{title} (no learnings)"), allow_empty=True)
    cleanup(ctx, title)
    return sha


def cleanup(ctx: RunContext, title: str | None = None) -> str | None:
    if title is None:
        todo = read_todo(ctx.repo)
        title = (todo.title if todo else None) or "plan"
    workspace_files.remove(ctx.repo, TODO_FILE)
    sha = git.commit_all(ctx.repo, message(Step.CLEANUP, f"remove {TODO_FILE} ({title})"))
    ctx.audit.record("step", step="cleanup", commit=sha)
    ctx.progress.info(f"[green]✓ cleanup[/green] removed {TODO_FILE}")
    return sha
