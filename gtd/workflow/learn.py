"""The learn phase: the agent merges the plan's learnings into AGENTS.md; then cleanup removes TODO.md.

The cleanup commit's body keeps the story once TODO.md is gone: the goal and the items built.
"""

from __future__ import annotations

from gtd.config.levels import Phase
from gtd.errors import GtdError
from gtd.exitcodes import ExitCode
from gtd.prompts import render
from gtd.workflow import git, leftovers
from gtd.workflow.context import RunContext
from gtd.workflow.phase_agent import PhaseAgent
from gtd.workflow.plan import AGENTS_FILE, read_text
from gtd.workflow.steps import Step, commit_human_edits, message
from gtd.workflow.todo import TODO_FILE, Todo, read_todo, remove_todo


def learn(ctx: RunContext) -> str | None:
    commit_human_edits(ctx.repo, ctx.progress)
    todo = read_todo(ctx.repo)
    if todo is None:
        raise GtdError(f"nothing to learn from: there is no {TODO_FILE} (a plan's learnings live there). "
                       "No learn step was committed.", exit_code=ExitCode.USAGE)
    if todo.unchecked():
        raise GtdError(f"{len(todo.unchecked())} item(s) in {TODO_FILE} are not built yet: run `gtd build` first "
                       "(or `gtd` to take the next step). No learn step was committed.", exit_code=ExitCode.USAGE)
    title = todo.title or "plan"
    learnings = todo.learnings
    sha = None
    if learnings:
        ctx.progress.phase("learn", level=ctx.level_for(Phase.LEARN).value, provider=ctx.provider.name)
        agent = PhaseAgent(ctx, Phase.LEARN)
        agent.ask(render("learn", title=title, learnings="\n".join(learnings), agents=read_text(ctx, AGENTS_FILE)),
                  system_prompt=render("system_learn"), editable_paths=[AGENTS_FILE])
        sha = git.commit_all(ctx.repo, message(Step.LEARN, title))
        leftovers.forget(ctx.repo)  # the agent's work is committed
        ctx.progress.info(f"[green]✓ learn[/green] {len(learnings)} learning(s) merged into {AGENTS_FILE}")
    else:
        sha = git.commit_all(ctx.repo, message(Step.LEARN, f"{title} (no learnings)"), allow_empty=True)
    ctx.audit.record("step", step="learn", commit=sha)  # also the empty one: the summary lists every commit
    if sha:
        ctx.progress.committed(git.subject(ctx.repo, sha), sha, git.commit_files(ctx.repo, sha))
    cleanup(ctx, title)
    return sha


def story(todo: Todo | None) -> str:
    """The cleanup commit's body: the goal as the plan stated it, and what was built."""
    if todo is None:
        return ""
    goal = []
    for line in todo.lines:
        if line.startswith("## "):
            break
        text = line.strip()
        if text and not text.startswith("# ") and text != "<!-- goal -->":
            goal.append(text)
    built = [item.text for item in todo.items if item.done]
    parts = []
    if goal:
        parts.append("Goal:\n" + "\n".join(f"  {line}" for line in goal))
    if built:
        parts.append("Built:\n" + "\n".join(f"- {item}" for item in built))
    unbuilt = [item.text for item in todo.items if not item.done]
    if unbuilt:
        parts.append("Not built:\n" + "\n".join(f"- {item}" for item in unbuilt))
    if todo.learnings:
        parts.append("Learnings:\n" + "\n".join(todo.learnings))
    return "\n\n".join(parts)


MAX_SEED_CHARS = 4000


def _is_seed(subject: str) -> bool:
    """A plan's seed commit: gtd's `💬 feedback: seed…`, the original's 🌱 (and 🧭 explore)."""
    return subject.startswith((message(Step.FEEDBACK, "seed"), "🌱", "🧭"))


def seed_text(repo) -> str:
    """What the person first wrote into TODO.md for this plan (the lines its seed commit added), as
    the original's cleanup body recorded it; empty when the history has no seed since the last cleanup."""
    from gtd.workflow.steps import step_of_subject

    for sha, subject in git.log(repo):
        if step_of_subject(subject) == Step.CLEANUP:
            return ""
        if _is_seed(subject):
            diff = git.git(repo, "show", "--format=", "--no-color", sha, "--", TODO_FILE, check=False)
            added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
            text = "\n".join(line for line in added if line.strip() != "<!-- goal -->").strip()
            return text[:MAX_SEED_CHARS]
    return ""


def cleanup(ctx: RunContext, title: str | None = None) -> str | None:
    todo = read_todo(ctx.repo)
    if title is None:
        title = (todo.title if todo else None) or "plan"
    seed = seed_text(ctx.repo)
    remove_todo(ctx.repo)
    body = "\n\n".join(part for part in (f"## Seed\n\n{seed}" if seed else "", story(todo)) if part)
    sha = git.commit_all(ctx.repo, message(Step.CLEANUP, f"remove {TODO_FILE} ({title})") + (f"\n\n{body}" if body else ""))
    ctx.audit.record("step", step="cleanup", commit=sha)
    if sha:
        ctx.progress.committed(git.subject(ctx.repo, sha), sha, git.commit_files(ctx.repo, sha))
    ctx.progress.info(f"[green]✓ cleanup[/green] removed {TODO_FILE}")
    return sha
