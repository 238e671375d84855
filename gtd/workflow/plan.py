"""The plan phase: the agent writes TODO.md; gtd checks its structure, re-prompts, commits."""

from __future__ import annotations

from gtd import workspace_files
from gtd.config.levels import Phase
from gtd.errors import GtdError
from gtd.exitcodes import ExitCode
from gtd.prompts import render
from gtd.terminal_text import markup
from gtd.workflow import git, leftovers
from gtd.workflow.context import RunContext
from gtd.workflow import markdown
from gtd.workflow.markdown import normalize_todo
from gtd.workflow.markers import carry_feedback_markers, remove_absorbed
from gtd.workflow.phase_agent import PhaseAgent
from gtd.workflow.steps import Step, commit_human_edits, marker_lines, marker_search, message, step_of_subject
from gtd.workflow.todo import TODO_FILE, read_todo, read_todo_text, with_optional_sections, write_todo

AGENTS_FILE = "AGENTS.md"


def read_text(ctx: RunContext, name: str, missing: str = "(none yet)") -> str:
    text = workspace_files.read_text(ctx.repo, name)
    return missing if text is None else text


def feedback_since_plan(ctx: RunContext) -> str:
    """The person's feedback commits since the last plan, as a diff the agent can read."""
    log = git.git(ctx.repo, "log", "--format=%H %s", "-50", check=False).splitlines()
    shas = []
    for line in log:
        sha, _, subject = line.partition(" ")
        step = step_of_subject(subject)
        if step == Step.PLAN:
            break
        if step == Step.FEEDBACK:
            shas.append(sha)
    if not shas:
        return "(none)"
    return "\n".join(git.git(ctx.repo, "show", "--format=%s", sha, check=False)[:8000] for sha in shas)


def plan(ctx: RunContext, goal: str | None = None) -> str:
    """Run the plan phase. Returns the commit sha. A plan the agent left unchanged, and valid, is
    committed as an empty plan commit: the workflow moves on to build instead of planning again."""
    if not goal and read_todo_text(ctx.repo) is None:
        raise GtdError(f"nothing to plan: there is no {TODO_FILE} and no goal. Run `gtd plan \"<goal>\"`, or write "
                       f"your goal into {TODO_FILE}.", exit_code=ExitCode.USAGE)
    # TODO.md is formatted before this phase commits (the seed, when it changed) and after the agent: mdformat
    # loads meanwhile (`gtd plan` starts it before its run context, cli/workflow_run.py).
    markdown.prepare_in_background()
    provider = ctx.provider  # a missing agent CLI fails here, before the goal is written into TODO.md
    if goal:
        existing = workspace_files.read_text(ctx.repo, TODO_FILE) or ""
        workspace_files.write_text(ctx.repo, TODO_FILE, existing + ("\n" if existing else "") + f"<!-- goal -->\n{goal}\n")
    commit_human_edits(ctx.repo, ctx.progress)
    ctx.progress.phase("plan", level=ctx.level_for(Phase.PLAN).value, provider=provider.name)
    agent = PhaseAgent(ctx, Phase.PLAN)
    markers = marker_search(ctx.repo)  # searches while the feedback is read
    prompt = render("plan", goal=f"Goal: {goal}" if goal else "Refine the plan in TODO.md.",
                    todo=read_text(ctx, TODO_FILE), feedback=feedback_since_plan(ctx),
                    markers="\n".join(marker_lines(ctx.repo, search=markers)) or "(none)",
                    agents=read_text(ctx, AGENTS_FILE))
    system = render("system_plan")
    for attempt in range(ctx.config.plan_retries + 1):
        agent.ask(prompt, system_prompt=system, editable_paths=[TODO_FILE])
        text = read_todo_text(ctx.repo)
        if text is not None and with_optional_sections(text) != text:
            write_todo(ctx.repo, with_optional_sections(text))  # a minimal plan (no Open questions/Learnings) stands
            ctx.progress.info(f"added the empty `## Open questions` / `## Learnings` sections {TODO_FILE} lacked")
        todo = read_todo(ctx.repo)
        errors = todo.errors() if todo else [f"{TODO_FILE} does not exist"]
        if not errors:
            markers = marker_search(ctx.repo)  # searches the code (never TODO.md) while TODO.md is formatted
            normalize_todo(ctx.repo)
            entries = marker_lines(ctx.repo, limit=1000, search=markers)
            planned = read_todo_text(ctx.repo) or ""
            carried = carry_feedback_markers(ctx.repo, planned, entries)
            if carried != planned:  # the person's new markers the plan left out become items citing them
                write_todo(ctx.repo, carried)
                normalize_todo(ctx.repo)
                todo = read_todo(ctx.repo) or todo
            left: dict[str, str] = {}
            absorbed = remove_absorbed(ctx.repo, read_todo_text(ctx.repo) or "", entries=entries, left=left)
            if absorbed:
                ctx.progress.info(f"removed the marker(s) the plan took over from the code: {markup(', '.join(absorbed))}")
            for path, why in left.items():
                ctx.progress.info(f"left the marker(s) the plan cites in {markup(path, one_line=True)} as they are: {why}")
            sha = git.commit_all(ctx.repo, message(Step.PLAN, todo.title or "plan"))
            if sha is None:
                ctx.progress.warn(f"the agent left {TODO_FILE} unchanged; it is a valid plan, so it stands as it is "
                                  "and the workflow moves on")
                sha = git.commit_all(ctx.repo, message(Step.PLAN, f"{todo.title or 'plan'} (unchanged)"), allow_empty=True)
            ctx.audit.record("step", step="plan", commit=sha)
            leftovers.forget(ctx.repo)  # the agent's work is committed
            if sha:
                ctx.progress.committed(git.subject(ctx.repo, sha), sha, git.commit_files(ctx.repo, sha))
            ctx.progress.info(f"[green]✓ plan[/green] {len(todo.items)} item(s) in {TODO_FILE}")
            return sha
        ctx.progress.warn(f"{TODO_FILE} is not valid yet (attempt {attempt + 1}): {'; '.join(errors)}")
        prompt = render("plan_fix", errors="\n".join(f"- {e}" for e in errors))
    raise GtdError(f"the plan is still not valid after {ctx.config.plan_retries + 1} attempt(s): {'; '.join(errors)}. "
                   f"Edit {TODO_FILE} yourself or run `gtd plan` again; no plan was committed.")
