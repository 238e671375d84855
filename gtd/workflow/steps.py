"""Steps, their commit prefixes, and inferring the next step from git state alone.

A person can stop at any time and resume later: the commit history says where we are.
Histories written by the original TypeScript gtd are read too (🤖 plan, 🎓 learn, 🤦 feedback,
👷 fix, 🌱/🧭 seed), so a plan it left half-built is built, not planned again.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path

from gtd import workspace_files
from gtd.commit_prefixes import COMMIT_PREFIXES
from gtd.record import field, record
from gtd.workflow import git
from gtd.workflow.todo import TODO_FILE, parse_todo, read_todo, read_todo_text


class Step(str, Enum):
    FEEDBACK = "feedback"  # human input for the agent (also the seed of a new plan)
    FIX = "fix"  # human edits that are not feedback; they never change the next step
    PLAN = "plan"
    BUILD = "build"
    LEARN = "learn"
    CLEANUP = "cleanup"
    CONFIG = "config"  # approvals saved to the project config


PREFIX: dict[Step, str] = {step: COMMIT_PREFIXES[step.value] for step in Step}
CONFIG_PREFIX = PREFIX[Step.CONFIG]
# The original gtd's prefixes (🔨 and 🧹 are the same in both); read, never written.
ORIGINAL_PREFIX: dict[str, Step] = {"🤖": Step.PLAN, "🎓": Step.LEARN, "🤦": Step.FEEDBACK, "👷": Step.FIX,
                                    "🌱": Step.FEEDBACK, "🧭": Step.FEEDBACK}

# Steps that move the workflow forward; FIX and CONFIG commits are transparent to inference.
_WORKFLOW_STEPS = (Step.FEEDBACK, Step.PLAN, Step.BUILD, Step.LEARN, Step.CLEANUP)
MARKER_WORDS = ("TODO", "FIXME", "FIX", "HACK", "XXX")
MARKER_RE = re.compile(r"\b(" + "|".join(MARKER_WORDS) + r")\s*:", re.IGNORECASE)
MARKER_GREP = r"\b(" + "|".join(MARKER_WORDS) + r")[[:space:]]*:"


def message(step: Step, summary: str) -> str:
    return f"{PREFIX[step]} {step.value}: {summary}"


def step_of_subject(subject: str) -> Step | None:
    for step, prefix in PREFIX.items():
        if subject.startswith(prefix):
            return step
    for prefix, step in ORIGINAL_PREFIX.items():
        if subject.startswith(prefix):
            return step
    return None


@record(frozen=True)
class StepCommit:
    step: Step
    sha: str
    subject: str

    def describe(self) -> str:
        return f"{self.sha[:10]} \"{self.subject}\""


def last_workflow_commit(repo: Path) -> StepCommit | None:
    for sha, subject in git.log(repo):
        step = step_of_subject(subject)
        if step in _WORKFLOW_STEPS:
            return StepCommit(step, sha, subject)
    return None


def last_workflow_step(repo: Path) -> Step | None:
    found = last_workflow_commit(repo)
    return found.step if found else None


def built_since_plan(repo: Path) -> bool:
    """Whether a build step was committed after the last plan (or ever, for a plan-less history)."""
    for _sha, subject in git.log(repo):
        step = step_of_subject(subject)
        if step == Step.BUILD:
            return True
        if step in (Step.PLAN, Step.FEEDBACK, Step.CLEANUP):
            return False
    return False


class Next(str, Enum):
    PLAN = "plan"
    BUILD = "build"
    LEARN = "learn"
    CLEANUP = "cleanup"
    ANSWER_QUESTIONS = "answer-questions"  # the plan has open questions only a person can answer
    IDLE = "idle"  # nothing to do until a person writes TODO.md or runs `gtd plan GOAL`


@record(frozen=True)
class Inference:
    next: Next
    reason: str
    rule: str = ""  # which rule decided, as a short stable name (shown by `gtd status`)
    commit: StepCommit | None = None  # the workflow commit it was read from

    def to_json(self) -> dict:
        return {"next": self.next.value, "reason": self.reason, "rule": self.rule,
                "commit": None if self.commit is None else {"sha": self.commit.sha, "subject": self.commit.subject,
                                                            "step": self.commit.step.value}}


def infer_next(repo: Path, *, committing: Step | None = None, committing_learnings_only: bool = False) -> Inference:
    """What `gtd` should do now, from committed history and the current TODO.md. `committing`: the
    workflow step the person's uncommitted edits are about to be committed as (gtd status asks
    what happens once they are); `committing_learnings_only`: those edits touch only Learnings."""
    found = last_workflow_commit(repo)
    last = committing or (found.step if found else None)
    todo = read_todo(repo)
    since = f"the last workflow commit is {found.describe()}" if found else "no workflow commit yet"

    def infer(next_step: Next, reason: str, rule: str) -> Inference:
        return Inference(next_step, f"{reason} ({since})", rule, found)

    if todo is None:
        if last == Step.LEARN:
            return infer(Next.CLEANUP, "learnings are merged; TODO.md is gone already", "learn-without-todo")
        return infer(Next.IDLE, f"no {TODO_FILE}: write one with your goal, or run `gtd plan \"<goal>\"`", "no-todo")
    if last == Step.LEARN:
        return infer(Next.CLEANUP, "learnings are merged into AGENTS.md", "after-learn")
    if last == Step.FEEDBACK and _only_learnings_since(repo, committing, committing_learnings_only):
        if todo.unchecked() and not todo.build_errors():
            return infer(Next.BUILD, f"the feedback only added learnings; {len(todo.unchecked())} unchecked item(s) "
                         f"in {TODO_FILE}", "learnings-feedback-unbuilt")
        return infer(Next.LEARN, "the feedback only changed the plan's learnings: nothing to plan again",
                     "learnings-feedback")
    if last in (None, Step.FEEDBACK, Step.CLEANUP):
        return infer(Next.PLAN, f"new goal or feedback to plan in {TODO_FILE}", "after-feedback")
    errors = todo.build_errors()
    if errors:
        return infer(Next.PLAN, f"{TODO_FILE} is not a plan gtd can build: {errors[0]}", "invalid-plan")
    if last == Step.PLAN and todo.open_questions:
        return infer(Next.ANSWER_QUESTIONS, f"the plan has {len(todo.open_questions)} open question(s): answer them "
                     f"in {TODO_FILE}", "open-questions")
    if todo.unchecked():
        return infer(Next.BUILD, f"{len(todo.unchecked())} unchecked item(s) in {TODO_FILE}", "unchecked-items")
    return infer(Next.LEARN, f"every item in {TODO_FILE} is checked", "all-done")


# -- the person's edits ------------------------------------------------------------------------


@record
class HumanEdits:
    step: Step  # FEEDBACK or FIX: what the last commit made of them was
    paths: list[str]
    seed: bool  # a brand-new TODO.md: the start of a plan
    fix_paths: list[str] = field(default_factory=list)  # files (or parts) that went into the 🔧 commit
    feedback_paths: list[str] = field(default_factory=list)  # files (or parts) that went into the 💬 commit
    commits: list[str] = field(default_factory=list)
    learnings_only: bool = False  # the feedback is an edit of TODO.md's Learnings alone


@record
class _Split:
    feedback_files: list[str] = field(default_factory=list)  # wholly feedback
    fix_files: list[str] = field(default_factory=list)  # wholly fix
    mixed: dict[str, str] = field(default_factory=dict)  # path -> the patch of its fix hunks only
    learnings_only: bool = False  # the TODO.md edit touched only its Learnings


def learnings_only(old: str | None, new: str | None) -> bool:
    """Whether a TODO.md change touched only its `## Learnings` section: the original gtd went on to
    learn after such a feedback commit instead of planning again."""
    if not old or not new or old == new:
        return False
    (old_rest, old_learned), (new_rest, new_learned) = _by_learnings(old), _by_learnings(new)
    # Prose or a blockquote appended at the end of the file (under Learnings, the last section) is a
    # request to the planner, not a learning: learnings are list items.
    added = [line for line in new_learned if line not in old_learned]
    return old_rest == new_rest and all(_LEARNING_LINE.match(line) for line in added)


_LEARNING_LINE = re.compile(r"^(\s*([-*+]|\d+[.)])\s|\s+[^\s>])")


def _by_learnings(text: str) -> tuple[list[str], list[str]]:
    """TODO.md's non-blank lines outside the Learnings section, and those in it (without its heading)."""
    rest, learned, inside = [], [], False
    for line in parse_todo(text).lines:
        if line.startswith("## "):
            inside = line[3:].strip().lower() == "learnings"
            if inside:
                continue
        if line.strip():
            (learned if inside else rest).append(line.rstrip())
    return rest, learned


def _only_learnings_since(repo: Path, committing: Step | None, committing_learnings_only: bool) -> bool:
    """The feedback since the last other workflow step (and the edits about to be committed, if any)
    only changed TODO.md's learnings. Earlier feedback not planned yet still needs the planner."""
    if committing and not committing_learnings_only:
        return False
    seen = committing_learnings_only
    for sha, subject in git.log(repo):
        step = step_of_subject(subject)
        if step not in _WORKFLOW_STEPS:
            continue
        if step != Step.FEEDBACK:
            return seen
        if not _learnings_only_commit(repo, sha):
            return False
        seen = True
    return seen


def _learnings_only_commit(repo: Path, sha: str) -> bool:
    """A commit that changed TODO.md's Learnings and nothing else."""
    if [line.split("\t", 1)[-1] for line in git.commit_files(repo, sha)] != [TODO_FILE]:
        return False
    return learnings_only(git.git(repo, "show", f"{sha}^:{TODO_FILE}", check=False),
                          git.git(repo, "show", f"{sha}:{TODO_FILE}", check=False))


def _hunks(diff: str) -> tuple[str, list[str]]:
    """A one-file diff split into its header and its hunks."""
    header, hunks = [], []
    for line in re.findall(r"[^\n]*\n|[^\n]+\Z", diff):  # patch lines end at "\n" only ("\r" is content)
        if line.startswith("@@"):
            hunks.append(line)
        elif hunks:
            hunks[-1] += line
        else:
            header.append(line)
    return "".join(header), hunks


def _adds_marker_text(hunk: str) -> bool:
    return any(line.startswith("+") and not line.startswith("+++") and MARKER_RE.search(line)
               for line in hunk.split("\n"))


def _split(repo: Path, changed: list[git.Change]) -> _Split:
    split = _Split()
    has_head = git.has_commits(repo)
    # A TODO.md that is only untracked (a new plan's seed) is in no commit: HEAD has none to show.
    todo_in_head = has_head and any(c.path == TODO_FILE and c.status != "??" for c in changed)
    diffs = git.diffs_from_head(repo, [c.path for c in changed if c.path != TODO_FILE and c.status != "??"]) \
        if has_head else {}
    for change in changed:
        if change.path == TODO_FILE:  # any edit of it is feedback, ticks and learnings too (as the original)
            split.feedback_files.append(change.path)
            split.learnings_only = todo_in_head and learnings_only(
                git.git(repo, "show", f"HEAD:{TODO_FILE}", check=False), read_todo_text(repo))
        elif change.status == "??":
            try:
                text = workspace_files.read_text(repo, change.path)
            except (OSError, workspace_files.UnsafeWorkspacePath):
                text = None  # a symlink, FIFO or huge file is nobody's feedback: never read, never followed
            (split.feedback_files if text is not None and MARKER_RE.search(text) else split.fix_files).append(change.path)
        else:
            diff = diffs.get(change.path, "")
            header, hunks = _hunks(diff)
            marked = [h for h in hunks if _adds_marker_text(h)]
            if not marked:
                split.fix_files.append(change.path)
            elif len(marked) == len(hunks):
                split.feedback_files.append(change.path)
            else:
                split.mixed[change.path] = header + "".join(h for h in hunks if h not in marked)
    return split


def classify_human_edits(repo: Path) -> HumanEdits | None:
    """Uncommitted edits are the person's. TODO.md edits and new TODO:/FIXME:/FIX:/HACK:/XXX: markers
    (any case) are feedback; the rest is a fix. Ticks and learnings in TODO.md are feedback too (as
    in the original gtd); one that only adds learnings leads on to learn, not to a re-plan."""
    changed = git.changes(repo)
    if not changed:
        return None
    return _classify(repo, changed)[0]


def _classify(repo: Path, changed: list[git.Change]) -> tuple[HumanEdits, _Split]:
    """classify_human_edits for these changes, and the split it was read from (diffs read once)."""
    split = _split(repo, changed)
    feedback = bool(split.feedback_files or split.mixed)
    todo_change = next((c for c in changed if c.path == TODO_FILE), None)
    seed = todo_change is not None and TODO_FILE in split.feedback_files and (
        todo_change.status in ("??", "A ") or last_workflow_step(repo) in (None, Step.CLEANUP))
    return HumanEdits(Step.FEEDBACK if feedback else Step.FIX, [c.path for c in changed], seed,
                      fix_paths=split.fix_files + list(split.mixed),
                      feedback_paths=split.feedback_files + list(split.mixed),
                      learnings_only=split.learnings_only and split.feedback_files == [TODO_FILE] and not split.mixed), split


@record
class PendingEdits:
    """The uncommitted changes and what `gtd` makes of them before a step (one reading, shared by
    commit_human_edits, which acts on it, and predict, which only reports it)."""

    changed: list[git.Change]
    agent: object = None  # gtd.workflow.leftovers.AgentWork: the agent's unfinished work, carried on by the next step
    unsafe: list = field(default_factory=list)  # untracked secrets or bulk: gtd stops (gtd.workflow.unsafe)
    edits: HumanEdits | None = None  # the person's: committed as fix and/or feedback
    split: _Split | None = None


def pending_edits(repo: Path, *, forget_stale: bool = True) -> PendingEdits | None:
    """None when nothing is uncommitted. The agent's unfinished work (gtd.workflow.leftovers) is told
    apart from the person's edits path by path; `forget_stale=False` (gtd status) only reads its record."""
    from gtd.workflow import leftovers
    from gtd.workflow.unsafe import find_unsafe

    from gtd.workflow.unsafe import left_out_earlier

    agent = leftovers.pending(repo, forget_done=forget_stale)
    kept_out = left_out_earlier(repo)  # a build step left them out: still untracked, neither yours nor to commit
    changed = [c for c in git.changes(repo) if not (c.status == "??" and c.path in kept_out)]
    if not changed:
        return None
    if agent is not None:
        theirs = set(agent.all_paths)
        changed = [c for c in changed if c.path not in theirs]
        if not changed:
            return PendingEdits([], agent=agent)
    untracked = [c.path for c in changed if c.status == "??"]
    unsafe = find_unsafe(untracked, git.tracked_dirs(repo)) if untracked else []
    if unsafe:
        return PendingEdits(changed, agent=agent, unsafe=unsafe)
    edits, split = _classify(repo, changed)
    return PendingEdits(changed, agent=agent, edits=edits, split=split)


def commit_human_edits(repo: Path, progress=None) -> HumanEdits | None:
    """Commit whatever the person changed: fixes (🔧) and feedback (💬, or the seed of a plan) in
    separate commits, fix first, hunk by hunk within a file. Untracked secrets or bulk stop it
    (gtd.workflow.unsafe). The agent's unfinished work (gtd.workflow.leftovers) is never in these
    commits: it stays for the phase to carry on."""
    from gtd.sandbox.host.placeholders import settle_leftovers
    from gtd.workflow.unsafe import UnsafeFiles

    settle_leftovers(repo)  # a killed sandbox's placeholders and planted protected paths are never committed
    pending = pending_edits(repo)
    if pending is None or pending.edits is None and not pending.unsafe:
        return None
    if pending.unsafe:
        raise UnsafeFiles(pending.unsafe)
    edits, split = pending.edits, pending.split
    from gtd.workflow import markdown

    if TODO_FILE in split.feedback_files + split.fix_files:
        markdown.normalize_todo(repo)

    def commit_rest(subject: str) -> str | None:  # everything left of the person's, none of the agent's
        if pending.agent is None:
            return git.commit_all(repo, subject)
        git.stage_only(repo, edits.paths, {})
        return git.commit_staged(repo, subject)

    if split.feedback_files or split.mixed:
        if split.fix_files or split.mixed:
            git.stage_only(repo, split.fix_files, split.mixed)
            sha = git.commit_staged(repo, message(Step.FIX, _shown(split.fix_files + list(split.mixed))))
            if sha:
                edits.commits.append(sha)
                _show(progress, repo, sha)
        if edits.seed:
            todo = read_todo(repo)
            summary = f"seed: {todo.title}" if todo and todo.title else "seed"
        else:
            summary = _shown(split.feedback_files + list(split.mixed))
        sha = commit_rest(message(Step.FEEDBACK, summary))
    else:
        sha = commit_rest(message(Step.FIX, _shown(edits.paths)))
    if sha:
        edits.commits.append(sha)
        _show(progress, repo, sha)
    return edits


def _shown(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")


def _show(progress, repo: Path, sha: str) -> None:
    if progress is not None:
        subject = git.subject(repo, sha)
        progress.committed(subject, sha, git.commit_files(repo, sha), step=(step_of_subject(subject) or Step.FIX).value)


def marker_search(repo: Path) -> git.Running:
    """The `git grep` marker_lines reads, started: other git runs can go on while it searches."""
    return git.start(repo, "grep", "-n", "-i", "-E", MARKER_GREP, "--", ".", f":!{TODO_FILE}")


def marker_lines(repo: Path, limit: int = 50, *, search: git.Running | None = None) -> list[str]:
    """Code lines with TODO:/FIXME:/FIX:/HACK:/XXX: markers (outside TODO.md), for the plan prompt:
    read from `search` (marker_search, started earlier) when given."""
    return (search or marker_search(repo)).output(check=False).splitlines()[:limit]


def predict(repo: Path) -> dict:
    """What `gtd` would do now and why, without doing anything (for `gtd status`): the same reading
    of the uncommitted changes as commit_human_edits, and the same inference as after it."""
    from gtd.workflow import leftovers

    result: dict = {"pending_edits": None, "agent_work": None}
    pending = pending_edits(repo, forget_stale=False)
    if pending is not None and pending.agent is not None:
        work = pending.agent
        result["agent_work"] = {"phase": work.phase, "paths": work.all_paths, "edited_by_you": work.edited,
                                "resumes_session": bool(work.session), "stopped": work.reason,
                                "what": (f"the {work.phase} agent's work in progress (a run is going on)"
                                         if work.reason == leftovers.RUNNING else
                                         f"the {work.phase or 'stopped'} phase's unfinished work (stopped: "
                                         f"{work.reason or 'unknown'}): the next {work.phase or 'step'} carries it on")
                                        + (" (your edits in it go into that commit)" if work.edited else "")}
    if pending is not None and pending.edits is None and not pending.unsafe:
        pending = None  # only the agent's
    if pending is not None and pending.unsafe:
        result["pending_edits"] = {"owner": "person", "paths": [c.path for c in pending.changed],
                                   "unsafe": [e.to_json() for e in pending.unsafe],
                                   "what": "gtd would stop: untracked secrets or generated bulk (see `unsafe`)"}
        result.update(next="stop", reason="untracked files look like secrets or generated bulk; ignore or add "
                      "them first", rule="unsafe-untracked", commit=None)
        return result
    elif pending is not None:
        edits = pending.edits
        result["pending_edits"] = {"owner": "person", "paths": edits.paths, "fix": edits.fix_paths,
                                   "feedback": edits.feedback_paths, "seed": edits.seed,
                                   "what": ("committed as " + " then ".join(
                                       ([f"{PREFIX[Step.FIX]} fix"] if edits.fix_paths else []) +
                                       ([f"{PREFIX[Step.FEEDBACK]} feedback"] if edits.feedback_paths else [])))}
        if edits.step == Step.FEEDBACK:
            inference = infer_next(repo, committing=Step.FEEDBACK, committing_learnings_only=edits.learnings_only)
            result.update(inference.to_json())
            if inference.next == Next.PLAN:
                why = "TODO.md changed" if TODO_FILE in edits.feedback_paths else \
                    "new TODO:/FIXME:-style markers in " + ", ".join(edits.feedback_paths)
                result.update(reason=f"your uncommitted edits are feedback ({why}): gtd commits them, then plans",
                              rule="pending-feedback")
            return result
    result.update(infer_next(repo).to_json())
    return result
