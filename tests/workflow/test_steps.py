"""Inferring the next step from git state, and classifying a person's uncommitted edits."""

from __future__ import annotations

import subprocess

from support import git

import pytest

from gtd.workflow.steps import Next, Step, classify_human_edits, commit_human_edits, infer_next, message, predict

PLAN = """# Goal

## Action items
- [ ] one
  - Tests: t1
- [ ] two
  - Tests: t2

## Open questions

## Learnings
- l
"""


def commit(repo, step: Step | None, subject: str, files: dict[str, str | None]):
    for name, content in files.items():
        path = repo / name
        if content is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message(step, subject) if step else subject)


def subjects(repo):
    return git(repo, "log", "--format=%s").splitlines()


def test_nothing_to_do_without_todo(repo):
    assert infer_next(repo).next == Next.IDLE


def test_seed_leads_to_plan(repo):
    commit(repo, Step.FEEDBACK, "seed: Goal", {"TODO.md": "# Goal\nmake it\n"})
    assert infer_next(repo).next == Next.PLAN


def test_after_plan_build_then_learn_then_cleanup(repo):
    commit(repo, Step.FEEDBACK, "seed", {"TODO.md": "# Goal\n"})
    commit(repo, Step.PLAN, "Goal", {"TODO.md": PLAN})
    assert infer_next(repo).next == Next.BUILD
    commit(repo, Step.BUILD, "one", {"TODO.md": PLAN.replace("- [ ] one", "- [x] one")})
    assert infer_next(repo).next == Next.BUILD
    commit(repo, Step.BUILD, "two", {"TODO.md": PLAN.replace("- [ ]", "- [x]")})
    assert infer_next(repo).next == Next.LEARN
    commit(repo, Step.LEARN, "Goal", {"AGENTS.md": "notes\n"})
    assert infer_next(repo).next == Next.CLEANUP
    commit(repo, Step.CLEANUP, "remove TODO.md", {"TODO.md": None})
    assert infer_next(repo).next == Next.IDLE


def test_fix_and_config_commits_do_not_change_the_step(repo):
    commit(repo, Step.FEEDBACK, "seed", {"TODO.md": "# Goal\n"})
    commit(repo, Step.PLAN, "Goal", {"TODO.md": PLAN})
    commit(repo, Step.FIX, "typo", {"README.md": "# fixed\n"})
    commit(repo, Step.CONFIG, "allow x", {".gtdrc.json": "{}"})
    assert infer_next(repo).next == Next.BUILD


def test_feedback_after_build_replans(repo):
    commit(repo, Step.FEEDBACK, "seed", {"TODO.md": "# Goal\n"})
    commit(repo, Step.PLAN, "Goal", {"TODO.md": PLAN})
    commit(repo, Step.FEEDBACK, "TODO.md", {"TODO.md": PLAN + "\nplease also do three\n"})
    assert infer_next(repo).next == Next.PLAN


def test_open_questions_wait_for_a_person(repo):
    commit(repo, Step.FEEDBACK, "seed", {"TODO.md": "# Goal\n"})
    commit(repo, Step.PLAN, "Goal", {"TODO.md": PLAN.replace("## Open questions\n", "## Open questions\n- Which DB?\n")})
    assert infer_next(repo).next == Next.ANSWER_QUESTIONS


def test_invalid_plan_is_planned_again(repo):
    commit(repo, Step.FEEDBACK, "seed", {"TODO.md": "# Goal\n"})
    commit(repo, Step.PLAN, "Goal", {"TODO.md": "# Goal\n- [ ] no sections\n"})
    assert infer_next(repo).next == Next.PLAN


def test_todo_edit_is_feedback_and_a_new_todo_is_a_seed(repo):
    (repo / "TODO.md").write_text("# Build a thing\n")
    edits = commit_human_edits(repo)
    assert edits.step == Step.FEEDBACK and edits.seed
    assert subjects(repo)[0] == "💬 feedback: seed: Build a thing"
    assert git(repo, "status", "--porcelain") == ""


def test_code_with_todo_marker_is_feedback(repo):
    (repo / "app.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    (repo / "app.py").write_text("x = 1\n# TODO: handle negative numbers\n")
    edits = classify_human_edits(repo)
    assert edits.step == Step.FEEDBACK and not edits.seed


def test_new_file_with_fixme_is_feedback(repo):
    (repo / "new.py").write_text("# FIXME: this is wrong\n")
    assert classify_human_edits(repo).step == Step.FEEDBACK


def test_plain_code_edit_is_a_fix(repo):
    (repo / "README.md").write_text("# project\nbetter words\n")
    edits = commit_human_edits(repo)
    assert edits.step == Step.FIX
    assert subjects(repo)[0] == "🔧 fix: README.md"


def test_removing_a_todo_marker_is_not_feedback(repo):
    (repo / "app.py").write_text("# TODO: old note\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    (repo / "app.py").write_text("done = True\n")
    assert classify_human_edits(repo).step == Step.FIX


def test_no_edits_commits_nothing(repo):
    before = subjects(repo)
    assert commit_human_edits(repo) is None
    assert subjects(repo) == before


EDITS = {
    "todo deleted": {"TODO.md": None},
    "todo edited": {"TODO.md": PLAN + "\nplease also do three\n"},
    "ticked by hand": {"TODO.md": PLAN.replace("- [ ]", "- [x]")},
    "marker": {"app.py": "# TODO: handle negative numbers\n"},
    "plain fix": {"README.md": "# fixed\n"},
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_status_predicts_what_gtd_does_with_the_persons_edits(repo, edit):
    """`gtd status` reads the edits as commit_human_edits does and infers as after committing them."""
    commit(repo, Step.FEEDBACK, "seed", {"TODO.md": "# Goal\n"})
    commit(repo, Step.PLAN, "Goal", {"TODO.md": PLAN})
    for name, content in EDITS[edit].items():
        (repo / name).unlink() if content is None else (repo / name).write_text(content)
    predicted = predict(repo)
    before = subjects(repo)
    commit_human_edits(repo)
    assert len(subjects(repo)) > len(before)
    assert predicted["next"] == infer_next(repo).next.value, predicted


def test_commit_human_edits_reads_each_diff_once(repo, monkeypatch):
    """Classifying and committing share one split: the changed files' diffs are read once, in one git run."""
    from gtd.workflow import git as gitmod

    (repo / "app.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    (repo / "app.py").write_text("x = 2\n# TODO: handle negative numbers\n")
    (repo / "README.md").write_text("# project\nbetter words\n")
    reads = []
    real = gitmod.diffs_from_head

    def counting(repo_, paths):
        reads.append(sorted(paths))
        return real(repo_, paths)

    monkeypatch.setattr(gitmod, "diffs_from_head", counting)
    edits = commit_human_edits(repo)
    assert edits.step == Step.FEEDBACK
    assert reads == [["README.md", "app.py"]]
    assert "handle negative numbers" in git(repo, "show", "HEAD", "--format=")


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_fix_and_feedback_hunks_separate_in_files_that_are_not_utf8(repo, newline):
    """A file in Latin-1 (or with CRLF line ends, or a lone carriage return in a line) splits into
    a fix commit and a feedback commit like any other: its hunks apply back byte for byte."""
    lines = [b"# caf\xe9 line %d" % i + (b"\r" if i == 10 else b"") + newline for i in range(30)]
    (repo / "legacy.py").write_bytes(b"".join(lines))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "legacy")
    edited = list(lines)
    edited[2] = b"# fixed by hand \xe9t\xe9" + newline
    edited[25] = lines[25] + b"# TODO: r\xe9sum\xe9 handling" + newline
    (repo / "legacy.py").write_bytes(b"".join(edited))
    edits = commit_human_edits(repo)
    assert edits.step == Step.FEEDBACK and len(edits.commits) == 2
    assert subjects(repo)[:2] == ["💬 feedback: legacy.py", "🔧 fix: legacy.py"]
    fixed = subprocess.run(["git", "show", "HEAD~1:legacy.py"], cwd=repo, capture_output=True).stdout
    assert fixed == b"".join(edited[:25] + [lines[25]] + edited[26:])
    assert (repo / "legacy.py").read_bytes() == b"".join(edited)
    assert git(repo, "status", "--porcelain") == ""


def test_absorbing_markers_leaves_files_it_cuts_nothing_from_alone(repo):
    """A cited marker outside a comment is kept, and its file is not rewritten; a file that is not
    UTF-8 is never rewritten (its other bytes would be replaced)."""
    from gtd.workflow.markers import remove_absorbed

    (repo / "app.py").write_text('print("TODO: not a comment")\n')
    (repo / "latin.py").write_bytes(b"# caf\xe9\n# TODO: cited\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    inode = (repo / "app.py").stat().st_ino
    assert remove_absorbed(repo, "- [ ] x (app.py:1, latin.py:2)\n") == []
    assert (repo / "app.py").stat().st_ino == inode
    assert (repo / "latin.py").read_bytes() == b"# caf\xe9\n# TODO: cited\n"
    assert git(repo, "status", "--porcelain") == ""


def test_absorbing_a_marker_counts_lines_as_git_does(repo):
    """git grep's line numbers count newlines only: a form feed (a page break) is not a line."""
    from gtd.workflow.markers import remove_absorbed

    (repo / "app.py").write_text("a = 1\n\x0c\n# TODO: kept\ny = 2  # FIXME: cited\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    assert remove_absorbed(repo, "- [ ] x (app.py:4)\n") == ["app.py:4"]
    assert (repo / "app.py").read_text() == "a = 1\n\x0c\n# TODO: kept\ny = 2\n"


def test_a_marker_search_started_earlier_reads_what_the_search_then_found(repo):
    """plan starts the search before it formats TODO.md (markers.remove_absorbed's `search`): the code's
    markers are cut as when searched at once, and TODO.md, never searched, is left to the formatter."""
    from gtd.workflow.markers import remove_absorbed
    from gtd.workflow.steps import marker_lines, marker_search

    (repo / "app.py").write_text("x = 1  # TODO: cited\n# FIXME: not cited\n")
    (repo / "TODO.md").write_text("- [ ] x (app.py:1, TODO.md:1)\n<!-- TODO: in the plan -->\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    assert marker_lines(repo, search=marker_search(repo)) == marker_lines(repo) == \
        ["app.py:1:x = 1  # TODO: cited", "app.py:2:# FIXME: not cited"]
    search = marker_search(repo)
    assert remove_absorbed(repo, (repo / "TODO.md").read_text(), search=search) == ["app.py:1"]
    assert (repo / "app.py").read_text() == "x = 1\n# FIXME: not cited\n"
    assert (repo / "TODO.md").read_text().endswith("<!-- TODO: in the plan -->\n")
