"""Steps, their commit prefixes, and inferring the next step from git state alone.

A person can stop at any time and resume later: the commit history says where we are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from gtd import workspace_files
from gtd.workflow import git
from gtd.workflow.todo import TODO_FILE, read_todo


class Step(str, Enum):
    FEEDBACK = "feedback"  # human input for the agent (also the seed of a new plan)
    FIX = "fix"  # human edits that are not feedback; they never change the next step
    PLAN = "plan"
    BUILD = "build"
    LEARN = "learn"
    CLEANUP = "cleanup"
    CONFIG = "config"  # approvals saved to the project config


PREFIX: dict[Step, str] = {
    Step.FEEDBACK: "💬",
    Step.FIX: "🔧",
    Step.PLAN: "📝",
    Step.BUILD: "🔨",
    Step.LEARN: "📚",
    Step.CLEANUP: "🧹",
    Step.CONFIG: "🔐",
}
CONFIG_PREFIX = PREFIX[Step.CONFIG]

# Steps that move the workflow forward; FIX and CONFIG commits are transparent to inference.
_WORKFLOW_STEPS = (Step.FEEDBACK, Step.PLAN, Step.BUILD, Step.LEARN, Step.CLEANUP)
_MARKER = re.compile(r"\b(TODO|FIXME):")


def message(step: Step, summary: str) -> str:
    return f"{PREFIX[step]} {step.value}: {summary}"


def step_of_subject(subject: str) -> Step | None:
    for step, prefix in PREFIX.items():
        if subject.startswith(prefix):
            return step
    return None


def last_workflow_step(repo: Path) -> Step | None:
    for subject in git.subjects(repo):
        step = step_of_subject(subject)
        if step in _WORKFLOW_STEPS:
            return step
    return None


class Next(str, Enum):
    PLAN = "plan"
    BUILD = "build"
    LEARN = "learn"
    CLEANUP = "cleanup"
    ANSWER_QUESTIONS = "answer-questions"  # the plan has open questions only a person can answer
    IDLE = "idle"  # nothing to do until a person writes TODO.md or runs `gtd plan GOAL`


@dataclass(frozen=True)
class Inference:
    next: Next
    reason: str


def infer_next(repo: Path) -> Inference:
    """What `gtd` should do now, from committed history and the current TODO.md."""
    last = last_workflow_step(repo)
    todo = read_todo(repo)
    if todo is None:
        if last == Step.LEARN:
            return Inference(Next.CLEANUP, "learnings are merged; TODO.md is gone already")
        return Inference(Next.IDLE, f"no {TODO_FILE}: write one with your goal, or run `gtd plan \"<goal>\"`")
    if last == Step.LEARN:
        return Inference(Next.CLEANUP, "learnings are merged into AGENTS.md")
    if last in (None, Step.FEEDBACK, Step.CLEANUP):
        return Inference(Next.PLAN, "new goal or feedback to plan")
    errors = todo.errors()
    if errors:
        return Inference(Next.PLAN, f"{TODO_FILE} is not a valid plan: {errors[0]}")
    if last == Step.PLAN and todo.open_questions:
        return Inference(Next.ANSWER_QUESTIONS, f"the plan has {len(todo.open_questions)} open question(s): answer them in {TODO_FILE}")
    if todo.unchecked():
        return Inference(Next.BUILD, f"{len(todo.unchecked())} unchecked item(s)")
    return Inference(Next.LEARN, "all items are done")


@dataclass(frozen=True)
class HumanEdits:
    step: Step  # FEEDBACK or FIX
    paths: list[str]
    seed: bool  # a brand-new TODO.md: the start of a plan


def classify_human_edits(repo: Path) -> HumanEdits | None:
    """Uncommitted edits are the person's. TODO.md edits and new TODO:/FIXME: markers are feedback."""
    changed = git.changes(repo)
    if not changed:
        return None
    paths = [change.path for change in changed]
    todo_change = next((c for c in changed if c.path == TODO_FILE), None)
    feedback = todo_change is not None or any(_adds_marker(repo, change) for change in changed)
    seed = todo_change is not None and (todo_change.status in ("??", "A ") or last_workflow_step(repo) in (None, Step.CLEANUP))
    return HumanEdits(Step.FEEDBACK if feedback else Step.FIX, paths, seed and feedback)


def _adds_marker(repo: Path, change: git.Change) -> bool:
    if change.status == "??":
        try:
            return bool(_MARKER.search(workspace_files.read_text(repo, change.path) or ""))
        except (OSError, workspace_files.UnsafeWorkspacePath):
            return False  # a symlink, FIFO or huge file is nobody's feedback: never read, never followed
    diff = git.git(repo, "diff", "HEAD", "--", change.path, check=False)
    return any(line.startswith("+") and not line.startswith("+++") and _MARKER.search(line) for line in diff.splitlines())


def commit_human_edits(repo: Path) -> HumanEdits | None:
    """Commit whatever the person changed, labelled as feedback/seed or fix. Changes a stopped
    phase left behind, untouched since, are the agent's: they stay for the phase to carry on."""
    from gtd.workflow import leftovers

    if leftovers.untouched(repo):
        return None
    edits = classify_human_edits(repo)
    if edits is None:
        return None
    if edits.seed:
        todo = read_todo(repo)
        summary = f"seed: {todo.title}" if todo and todo.title else "seed"
    else:
        shown = ", ".join(edits.paths[:3]) + (f" (+{len(edits.paths) - 3} more)" if len(edits.paths) > 3 else "")
        summary = shown
    git.commit_all(repo, message(edits.step, summary))
    return edits


def marker_lines(repo: Path, limit: int = 50) -> list[str]:
    """Code lines with TODO:/FIXME: markers (outside TODO.md), for the plan prompt."""
    out = git.git(repo, "grep", "-n", "-E", r"(TODO|FIXME):", "--", ".", f":!{TODO_FILE}", check=False)
    return out.splitlines()[:limit]
