"""Workflow bugs that bite everyone (issue 11), through the real CLI, scripted provider, real sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import git, run_gtd
from test_workflow_e2e import PLAN, TEST_FILE, setup_repo, subjects, write_script

from gtd.audit import AuditLog
from gtd.workflow.markdown import normalized

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

GOOD = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                    {"write": {"path": "test_count.py", "content": TEST_FILE}}]}


def agent_runs(repo: Path, phase: str) -> int:
    return len([e for e in AuditLog(repo).read() if e["event"] == "agent_run" and e["phase"] == phase])


def test_a_plan_the_agent_leaves_unchanged_moves_on_instead_of_replanning(repo):
    setup_repo(repo, write_script(repo, [GOOD]))
    (repo / "TODO.md").write_text(normalized(PLAN))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "💬 feedback: seed: Counter")
    # the plan agent touches nothing: the valid plan stands, and the next step is build
    unchanged = {"plan": [{"actions": [{"shell": "true"}]}], "build": [GOOD],
                 "learn": [{"actions": [{"write": {"path": "AGENTS.md", "content": "# Notes\n"}}]}]}
    (repo.parent / "script.json").write_text(json.dumps(unchanged))
    result = run_gtd("--all", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "the agent left TODO.md unchanged" in result.stderr
    assert agent_runs(repo, "plan") == 1  # no re-plan loop
    assert subjects(repo)[:4] == ["🧹 cleanup: remove TODO.md (Counter)", "📚 learn: Counter",
                                  "🔨 build: Add count.py with add(a, b)", "📝 plan: Counter (unchanged)"]


def test_all_stops_when_a_step_changes_nothing(repo):
    # an invalid plan the agent never fixes: one plan step (with its re-prompts), then a clear stop
    script = {"plan": [{"actions": [{"shell": "true"}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    setup_repo(repo, repo.parent / "script.json")
    (repo / "TODO.md").write_text("# Counter\n- [ ] no sections\n")
    result = run_gtd("--all", cwd=repo)
    assert result.returncode == 1
    assert "the plan is still not valid" in result.stderr
    assert agent_runs(repo, "plan") == 3  # 1 + planRetries (2), not maxBuildSteps + 4


def _plan_and_build_without_a_configured_test_command(repo):
    """A repo whose .gtdrc.json names no test command, planned and built once: the build's result."""
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(write_script(repo, [GOOD]))}))
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 0, result.stderr
    return result


def test_no_test_command_is_said_loudly_and_recorded_in_the_commit(repo):
    result = _plan_and_build_without_a_configured_test_command(repo)
    assert "NO TEST COMMAND" in result.stderr
    assert "Not tested: no test command" in git(repo, "log", "-1", "--format=%b")


def test_a_detected_test_command_is_announced_and_used(repo):
    (repo / "Makefile").write_text("test:\n\tpython3 -m unittest -q\n")
    result = _plan_and_build_without_a_configured_test_command(repo)
    assert "test command: make test (detected from the Makefile's `test` target" in result.stderr
    assert "Tested with: make test" in git(repo, "log", "-1", "--format=%b")


def test_red_baseline_is_said_before_any_agent_run_and_can_stop_it(repo):
    setup_repo(repo, write_script(repo, [GOOD]), test_command="echo already broken; exit 3")
    config = json.loads((repo / ".gtdrc.json").read_text())
    (repo / ".gtdrc.json").write_text(json.dumps({**config, "baselineTests": "stop"}))
    git(repo, "commit", "-qam", "stop on a red baseline")
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    before = subjects(repo)
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 1
    assert "baseline tests FAIL before any build step" in result.stderr and "already broken" in result.stderr
    assert agent_runs(repo, "build") == 0 and subjects(repo) == before


def test_red_baseline_headless_stops_unless_build_on_red_then_records_it(repo):
    """Headless with the default `ask`: nobody to ask, so exit 1 before any agent run (the original gtd);
    --build-on-red builds anyway and records the red baseline."""
    setup_repo(repo, write_script(repo, [GOOD]), test_command="test -f count.py && python3 -m unittest -q")
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    before = subjects(repo)
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 1 and "no terminal to ask" in result.stderr and "--build-on-red" in result.stderr
    assert agent_runs(repo, "build") == 0 and subjects(repo) == before
    result = run_gtd("build", "--build-on-red", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stderr.index("baseline tests FAIL") < result.stderr.index("write count.py")  # said before the agent ran
    assert "Baseline: the tests were already red" in git(repo, "log", "-1", "--format=%b")


def test_learn_without_todo_and_plan_without_goal_refuse_and_commit_nothing(repo):
    setup_repo(repo, write_script(repo, [GOOD]))
    before = subjects(repo)
    learn = run_gtd("learn", cwd=repo)
    assert learn.returncode == 2 and "nothing to learn from: there is no TODO.md" in learn.stderr
    plan = run_gtd("plan", cwd=repo)
    assert plan.returncode == 2 and "nothing to plan" in plan.stderr
    assert subjects(repo) == before and agent_runs(repo, "plan") == 0


def test_options_before_the_subcommand_are_honoured_or_refused(repo, tmp_path):
    script = write_script(repo, [GOOD])
    (repo / ".gtdrc.json").write_text(json.dumps({"script": str(script), "provider": "claude"}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    (repo / "TODO.md").write_text("# Counter\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # -p and -C before the subcommand take effect (claude is not needed: scripted runs)
    result = run_gtd("-p", "scripted", "-C", str(repo), "--level", "readonly", "plan", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0] == "📝 plan: Counter"
    assert any(e["event"] == "level_override" and e["level"] == "readonly" for e in AuditLog(repo).read())
    # --non-interactive before the subcommand: a boundary hit is saved for `gtd approve`, exit 4
    sneaky = {"plan": [{"actions": [{"write": {"path": "oops.py", "content": "x\n"}}]}]}
    script.write_text(json.dumps(sneaky))
    (repo / "TODO.md").write_text(PLAN + "\n> more\n")
    assert run_gtd("--non-interactive", "-p", "scripted", "plan", cwd=repo).returncode == 4
    # the same option twice with different values, and run options before a command that takes none
    twice = run_gtd("-p", "claude", "plan", "-p", "scripted", cwd=repo)
    assert twice.returncode == 2 and "--provider is given twice" in twice.stderr
    show = run_gtd("-p", "scripted", "config", "show", cwd=repo)
    assert show.returncode == 2 and "--provider given before `config`" in show.stderr
    assert run_gtd("--all", "build", cwd=repo).returncode == 2


def test_secrets_and_bulk_are_never_swept_into_a_commit(repo):
    setup_repo(repo, write_script(repo, [GOOD]))
    before = subjects(repo)
    (repo / ".env").write_text("API_KEY=sk-live-123\n")
    venv = repo / ".venv" / "lib"
    venv.mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    for i in range(30):
        (venv / f"mod{i}.py").write_text("x = 1\n")
    (repo / "TODO.md").write_text("# Counter\n")
    result = run_gtd(cwd=repo)
    assert result.returncode == 1
    payload = json.loads(result.stdout)
    assert payload["status"] == "unsafe_untracked_files"
    assert {(f["path"], f["why"]) for f in payload["files"]} == {(".env", "secret"), (".venv/", "bulk")}
    assert ".env  (secret)" in result.stderr
    assert subjects(repo) == before  # nothing committed, not even TODO.md
    # once ignored, the person's real edit goes through and its files are shown
    (repo / ".git" / "info" / "exclude").write_text(".env\n.venv/\n")
    result = run_gtd("plan", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "committed" in result.stderr and "    A  TODO.md" in result.stderr
    assert ".env" not in git(repo, "show", "--name-only", "--format=", "HEAD~1")


def test_fix_hunks_and_feedback_hunks_go_into_separate_commits(repo):
    setup_repo(repo, write_script(repo, [GOOD]))
    lines = [f"line {i}\n" for i in range(30)]
    (repo / "app.py").write_text("".join(lines))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "📝 plan: Counter")
    edited = list(lines)
    edited[2] = "line 2 fixed by hand\n"
    edited[25] = "line 25\n# hack: the agent should make this configurable\n"
    (repo / "app.py").write_text("".join(edited))
    (repo / "notes.py").write_text("# xxx: and this too\n")
    result = run_gtd("status", "--json", cwd=repo)
    status = json.loads(result.stdout)
    assert status["next"] == "plan" and status["rule"] == "pending-feedback"
    assert subjects(repo)[0] == "📝 plan: Counter"  # status ran nothing
    plan_agent = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN.replace(
        "## Open questions", "- [ ] Make it configurable (app.py:27, notes.py:1)\n  - Tests: t\n\n## Open questions")}}]}]}
    (repo.parent / "script.json").write_text(json.dumps(plan_agent))
    assert run_gtd("plan", cwd=repo).returncode == 0
    assert subjects(repo)[:3] == ["📝 plan: Counter", "💬 feedback: notes.py, app.py", "🔧 fix: app.py"]
    fix = git(repo, "show", "HEAD~2", "--format=")
    assert "line 2 fixed by hand" in fix and "hack:" not in fix
    assert "hack: the agent" in git(repo, "show", "HEAD~1", "--format=")
    # the plan cited both markers by path:line: gtd removed them from the code in the plan commit
    assert "hack:" not in (repo / "app.py").read_text() and "line 2 fixed by hand" in (repo / "app.py").read_text()
    assert (repo / "notes.py").read_text() == ""
    assert "app.py" in git(repo, "show", "--name-only", "--format=", "HEAD")


def test_ticking_by_hand_with_learnings_is_feedback_and_replans(repo):
    """The original gtd: learnings and items both changed -> feedback, and the plan is made again."""
    setup_repo(repo, write_script(repo, [GOOD]))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "📝 plan: Counter")
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]") + "- Keep it small.\n")
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["next"] == "plan", status
    assert status["pending_edits"]["feedback"] == ["TODO.md"] and status["pending_edits"]["fix"] == []


def test_a_persons_fix_with_nothing_left_to_build_is_checked(repo):
    setup_repo(repo, write_script(repo, [GOOD]), test_command="python3 -m unittest -q")
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]"))
    (repo / "count.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_count.py").write_text(TEST_FILE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "🔨 build: Add count.py with add(a, b)")
    (repo / "count.py").write_text("def add(a, b):\n    return a * b\n")  # the person's "fix" breaks it
    result = run_gtd(cwd=repo)
    assert result.returncode == 1
    assert "tests fail after your fix" in result.stderr and "AssertionError" in result.stderr
    assert subjects(repo)[0] == "🔧 fix: count.py"  # the fix is committed, nothing after it


def test_cleanup_commit_records_the_goal_and_the_built_items(repo):
    setup_repo(repo, write_script(repo, [GOOD]))
    (repo / "TODO.md").write_text("# Counter\nadd numbers, please\n")
    assert run_gtd("--all", cwd=repo).returncode == 0
    body = git(repo, "log", "-1", "--format=%b")
    assert subjects(repo)[0].startswith("🧹 cleanup")
    assert "Built:\n- Add count.py with add(a, b)" in body


def test_status_says_what_comes_next_and_runs_nothing(repo):
    setup_repo(repo, write_script(repo, [GOOD]))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "🤖 plan: structured action items")  # the original gtd's plan commit
    head = git(repo, "rev-parse", "HEAD")
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert (status["next"], status["rule"]) == ("build", "unchecked-items")
    assert status["commit"]["subject"] == "🤖 plan: structured action items"
    assert status["test_command"] == {"command": "python3 -m unittest -q", "source": "config"}
    text = run_gtd("status", cwd=repo).stdout
    assert "next: build" in text and "🤖 plan: structured action items" in text
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""
    assert not AuditLog(repo).read()
