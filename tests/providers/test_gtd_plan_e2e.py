"""`gtd plan` with each real agent CLI using its own file tools on TODO.md at level readonly.

At readonly only TODO.md is writable, not its directory. Claude Code's Write/Edit save through a
sibling temp file and a rename, falling back to writing in place only on EACCES: the sandbox's
sealed workspace root gives exactly that, so the agent's natural tools work (no shell heredoc
workaround) while every other path in the workspace stays unwritable."""

from __future__ import annotations

import pytest

from fakemodel.server import say, tool
from support import explain, git, run_gtd
from gtd.workflow.markdown import normalized

pytestmark = pytest.mark.e2e

PLAN = """# Hello file

## Action items
- [ ] Create hello.txt saying hi
  - Tests: `cat hello.txt` succeeds

## Open questions

## Learnings
"""


def gtd_plan(agent, repo, *goal: str):
    args = ["plan", *goal, "--provider", agent.name, "--non-interactive"]
    if agent.model:
        args += ["--model", agent.model]
    return run_gtd(*args, cwd=repo, timeout=300)


def test_plan_written_with_the_agents_write_tool(agent, repo, fake_model):
    t = agent.files
    todo = str(repo / "TODO.md")
    fake_model.script([
        tool(t.read, {t.path: todo}),  # claude refuses to overwrite a file it has not read
        tool(t.write, {t.path: todo, "content": PLAN}),
        say("Planned."),
    ])
    result = gtd_plan(agent, repo, "make a hello file")
    assert result.returncode == 0, explain(result)
    assert git(repo, "log", "-1", "--format=%s").startswith("📝 plan: Hello file")
    assert git(repo, "show", "HEAD:TODO.md") == normalized(PLAN)  # as written, then formatted by gtd (mdformat)
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # no temp file left behind
    assert "refused" not in result.stderr, explain(result)


def test_plan_refined_with_the_agents_edit_tool(agent, repo, fake_model):
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "TODO.md")
    git(repo, "commit", "-q", "-m", "💬 feedback: seed: Hello file")
    t = agent.files
    todo = str(repo / "TODO.md")
    fake_model.script([
        tool(t.read, {t.path: todo}),
        tool(t.edit, {t.path: todo, t.old: "saying hi", t.new: "saying hello"}),
        say("Refined."),
    ])
    result = gtd_plan(agent, repo)
    assert result.returncode == 0, explain(result)
    assert "- [ ] Create hello.txt saying hello" in git(repo, "show", "HEAD:TODO.md"), explain(result)
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
