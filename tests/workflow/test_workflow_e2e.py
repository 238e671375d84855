"""The whole workflow, end to end, on the scripted provider inside the real sandbox, via the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import git, run_gtd

from gtd.paths import user_config_file

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

PLAN = """# Counter

## Action items
- [ ] Add count.py with add(a, b)
  - Tests: test_count.py

## Open questions

## Learnings
- Use unittest.
"""

TEST_FILE = """import unittest
from count import add


class T(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""


def write_script(repo: Path, build_turns: list[dict], plan: str = PLAN) -> Path:
    script = {
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content": plan}}]}],
        "build": build_turns,
        "learn": [{"actions": [{"write": {"path": "AGENTS.md", "content": "# Notes\n- Use unittest.\n"}}]}],
    }
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    return path


def setup_repo(repo: Path, script: Path, test_command: str = "python3 -m unittest -q") -> None:
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script),
                                                  "testCommand": test_command, "testRetries": 1}))
    (repo / ".gitignore").write_text("__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")


def subjects(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def test_plan_build_learn_cleanup_with_real_commits(repo):
    good = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                        {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [good]))
    (repo / "TODO.md").write_text("# Counter\nadd numbers\n")

    result = run_gtd("--all", cwd=repo)
    assert result.returncode == 0, result.stderr

    assert subjects(repo)[:5] == [
        "🧹 cleanup: remove TODO.md (Counter)",
        "📚 learn: Counter",
        "🔨 build: Add count.py with add(a, b)",
        "📝 plan: Counter",
        "💬 feedback: seed: Counter",
    ]
    assert not (repo / "TODO.md").exists()
    assert "Use unittest" in (repo / "AGENTS.md").read_text()
    # gtd (not the agent) ticked the item in the build commit
    built = git(repo, "show", "HEAD~2:TODO.md")
    assert "- [x] Add count.py with add(a, b)" in built
    assert git(repo, "status", "--porcelain") == ""


def test_next_step_runs_one_step_at_a_time(repo):
    good = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                        {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [good]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd(cwd=repo).returncode == 0
    assert subjects(repo)[0] == "📝 plan: Counter"
    assert run_gtd(cwd=repo).returncode == 0
    assert subjects(repo)[0].startswith("🔨 build:")


def test_build_with_every_item_checked_says_there_is_nothing_to_build(repo):
    setup_repo(repo, write_script(repo, []))
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]"))
    git(repo, "add", "TODO.md")
    git(repo, "commit", "-q", "-m", "📝 plan: Counter")
    for args in (["build"], ["build", "--single"]):
        result = run_gtd(*args, cwd=repo)
        assert result.returncode == 0, result.stderr
        assert "nothing to build: every item in TODO.md is checked; `gtd learn` is next" in result.stderr
    assert subjects(repo)[0] == "📝 plan: Counter"


def test_failing_tests_reprompt_then_fail_without_committing(repo):
    broken = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a - b\n"}},
                          {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [broken]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    before = subjects(repo)
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 1
    assert "tests still fail after 2 attempt(s)" in result.stderr
    assert subjects(repo) == before  # nothing committed
    assert (repo / "count.py").exists()  # the agent's work is left for the person


def test_retry_prompt_carries_the_failure_and_the_fix_lands(repo):
    broken = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a - b\n"}},
                          {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    fixed = {"when": ["failed", "AssertionError"],
             # (a different size than the broken file: Python's bytecode cache keys on mtime+size)
             "actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b  # fixed\n"}}]}
    setup_repo(repo, write_script(repo, [fixed, broken]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "tests failed (attempt 1 of 2)" in result.stderr
    assert subjects(repo)[0] == "🔨 build: Add count.py with add(a, b)"


def test_malformed_plan_is_reprompted_with_its_errors(repo):
    script = {"plan": [{"when": "does not have the required structure",
                        "actions": [{"write": {"path": "TODO.md", "content": PLAN}}]},
                       {"actions": [{"write": {"path": "TODO.md", "content": "# Counter\n- [ ] x\n"}}]}]}
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    setup_repo(repo, path)
    (repo / "TODO.md").write_text("# Counter\n")
    result = run_gtd("plan", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "is not valid yet (attempt 1)" in result.stderr
    assert subjects(repo)[0] == "📝 plan: Counter"


def test_plan_phase_cannot_write_code(repo):
    sneaky = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}},
                                    {"write": {"path": "count.py", "content": "oops\n"}}]}]}
    path = repo.parent / "script.json"
    path.write_text(json.dumps(sneaky))
    setup_repo(repo, path)
    (repo / "TODO.md").write_text("# Counter\n")
    result = run_gtd("plan", "--non-interactive", cwd=repo)
    assert not (repo / "count.py").exists()
    # headless: the write outside the phase's boundary becomes a pending request, exit 4, JSON on stdout
    assert result.returncode == 4, result.stderr
    payload = json.loads(result.stdout)
    assert payload["status"] == "escalation_pending"
    assert payload["requests"][0]["kind"] == "path"
    assert payload["requests"][0]["target"].endswith("count.py")


def test_demo_command_runs_the_embedded_script(tmp_path):
    target = tmp_path / "demo"
    result = run_gtd("demo", "--keep", str(target), cwd=tmp_path, env={"GTD_DEMO_SCRIPT": ""})  # as a person runs it
    assert result.returncode == 0, result.stderr
    log = subjects(target)
    assert log[0].startswith("🧹 cleanup")
    assert sum(1 for s in log if s.startswith("🔨 build")) == 2
    assert "Hello, Grace!" not in (target / "greet.py").read_text()  # code, not output
    assert "def greet" in (target / "greet.py").read_text()
    # the demo's agent tried to plant a git hook; the sandbox refused it
    assert not (target / ".git" / "hooks" / "pre-commit").exists()
    assert ".git/hooks/pre-commit" in result.stdout


def test_network_failure_without_a_host_asks_for_the_network_level(repo):
    good = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}}]}
    # Lookups succeed inside the sandbox (gtd's stand-in DNS), so the failure a tool prints about an
    # unreachable network is printed as such a tool would.
    command = "echo 'ping: mirror: Temporary failure in name resolution' >&2; exit 2"
    setup_repo(repo, write_script(repo, [good]), test_command=command)
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 4, result.stderr
    request = json.loads(result.stdout)["requests"][0]
    assert (request["kind"], request["requested_level"], request["level"]) == ("level", "network", "readwrite")
    assert subjects(repo)[0] == "📝 plan: Counter"  # nothing committed


def test_unfinished_agent_work_is_not_taken_for_the_persons_edits(repo):
    broken = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a - b\n"}},
                          {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [broken]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    assert run_gtd("build", cwd=repo).returncode == 1  # red tests: the agent's work stays uncommitted
    planned = subjects(repo)

    # untouched leftovers: the next run carries on with them, no 💬/🔧 commit in between
    fixed = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b  # fixed\n"}}]}
    write_script(repo, [fixed])
    assert run_gtd("build", cwd=repo).returncode == 0
    assert subjects(repo)[1:] == planned
    assert subjects(repo)[0].startswith("🔨 build:")


def test_leftovers_edited_by_the_person_stay_with_the_agents_work_and_are_named(repo):
    """The person edits a file of the agent's unfinished work (issue 24): the agent's work stays the agent's
    (no 🔧 commit of it), the carrying-on agent is told of the edit, and the 🔨 commit's body names it."""
    broken = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a - b\n"}},
                          {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [broken]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    planned = subjects(repo)
    assert run_gtd("build", cwd=repo).returncode == 1
    (repo / "count.py").write_text("def add(a, b):\n    return a + b  # by hand\n")
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["agent_work"]["paths"] == ["count.py", "test_count.py"]
    assert status["agent_work"]["edited_by_you"] == ["count.py"] and status["pending_edits"] is None
    write_script(repo, [{"when": ["The person edited count.py since", "Carry on"],
                         "actions": [{"write": {"path": "count.py",
                                                "content": "def add(a, b):\n    return a + b  # by hand, reviewed\n"}}]}])
    assert run_gtd("build", cwd=repo).returncode == 0
    assert subjects(repo)[1:] == planned
    assert subjects(repo)[0].startswith("🔨 build:")
    body = git(repo, "log", "-1", "--format=%b")
    assert "Also holds the person's edits to count.py" in body
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["TODO.md", "count.py", "test_count.py"]


def test_a_run_stopped_before_its_agent_starts_takes_no_edit_for_the_agents(repo):
    """A run that stops before any agent runs (here: TODO.md is no plan) must not record the work tree as the
    agent's: the person's edit made meanwhile stays known as theirs."""
    broken = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a - b\n"}},
                          {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [broken]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    assert run_gtd("build", cwd=repo).returncode == 1  # red: the agent's work stays, recorded as the agent's
    (repo / "count.py").write_text("def add(a, b):\n    return a + b  # by hand\n")
    (repo / "TODO.md").write_text("# Counter\n\nno plan here\n")
    stopped = run_gtd("build", cwd=repo)
    assert stopped.returncode == 1 and "is not a plan gtd can build" in stopped.stderr
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["agent_work"]["paths"] == ["count.py", "test_count.py"]
    assert status["agent_work"]["edited_by_you"] == ["count.py"]


def test_build_where_the_agent_changes_nothing_never_ticks(repo):
    setup_repo(repo, write_script(repo, [{"actions": [{"shell": "true"}]}]))
    (repo / "TODO.md").write_text("# Counter\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    planned = subjects(repo)
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 1, result.stderr
    assert "the agent changed nothing: asking it again" in result.stderr
    assert "the agent changed nothing for: Add count.py with add(a, b)" in result.stderr
    assert subjects(repo) == planned and "- [ ] Add count.py" in (repo / "TODO.md").read_text()
    # the person does the item by hand and ticks it: the code is a fix, the tick is feedback (as in the
    # original gtd), so the plan is looked at again
    (repo / "count.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_count.py").write_text(TEST_FILE)
    (repo / "TODO.md").write_text((repo / "TODO.md").read_text().replace("- [ ]", "- [x]"))
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[:3] == ["📝 plan: Counter", "💬 feedback: TODO.md", "🔧 fix: count.py, test_count.py"]


def test_a_step_without_an_agent_needs_no_agent_cli(repo, tmp_path):
    # The provider is resolved only when a phase runs: cleanup (and "nothing to do") work without one.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    user_config = user_config_file()  # the person's choice (a project file's choice of provider needs `gtd trust`)
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text('provider = "claude"\n')
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]"))
    (repo / "AGENTS.md").write_text("# Notes\n- Use unittest.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "📚 learn: Counter")
    result = run_gtd(cwd=repo, env={"PATH": str(bin_dir)})
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0].startswith("🧹 cleanup:") and not (repo / "TODO.md").exists()
    head = git(repo, "rev-parse", "HEAD")
    result = run_gtd("plan", "more", cwd=repo, env={"PATH": str(bin_dir)})  # a phase does need it
    assert result.returncode == 2 and "`claude` is not on PATH" in result.stderr, result.stderr
    assert git(repo, "rev-parse", "HEAD") == head and not (repo / "TODO.md").exists()  # the goal was not seeded


@pytest.mark.parametrize("learnings", ["- Use unittest.\n", ""], ids=["learnings", "no learnings"])
def test_the_learn_summary_lists_every_commit_it_made(repo, learnings):
    """Issue 24: the summary listed 2 of learn's 3 commits (the empty 📚 commit of a plan without
    learnings was never reported): the person's 🔧 fix, 📚 learn and 🧹 cleanup are all there."""
    setup_repo(repo, write_script(repo, []))
    (repo / "TODO.md").write_text(PLAN.replace("- [ ]", "- [x]").replace("- Use unittest.\n", learnings))
    git(repo, "add", "TODO.md")
    git(repo, "commit", "-q", "-m", "📝 plan: Counter")
    (repo / "notes.txt").write_text("the person's own edit\n")
    result = run_gtd("learn", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    made = git(repo, "log", "--format=%H %s", "HEAD~3..HEAD").splitlines()[::-1]
    assert [line.split(" ", 1)[1].split(":")[0] for line in made] == ["🔧 fix", "📚 learn", "🧹 cleanup"]
    run_end = next(json.loads(line) for line in result.stdout.splitlines() if '"run_end"' in line)
    assert [c["hash"] for c in run_end["commits"]] == [line.split()[0][:10] for line in made]
    summary = result.stderr[result.stderr.index("summary ("):]
    assert all(f"committed {line.split()[0][:10]}" in summary for line in made), summary


def test_the_built_in_demo_script_is_refused_in_a_real_repository(repo):
    """Issue 24: `gtd -p scripted plan "my goal"` committed the demo's canned plan about something else."""
    before = git(repo, "log", "--format=%H")
    result = run_gtd("-p", "scripted", "plan", "my goal", cwd=repo, env={"GTD_DEMO_SCRIPT": ""})
    assert result.returncode == 2, (result.stdout, result.stderr)
    message = " ".join(result.stderr.split())
    assert "built-in demo script" in message and "only in `gtd demo`" in message and "Nothing was done" in message
    assert git(repo, "log", "--format=%H") == before and git(repo, "status", "--porcelain") == ""
    # a script of the person's own is what they asked for: it runs
    setup_repo(repo, write_script(repo, []))
    result = run_gtd("-p", "scripted", "plan", "Counter", cwd=repo, env={"GTD_DEMO_SCRIPT": ""})
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0] == "📝 plan: Counter"


def test_a_test_command_that_passes_still_shows_and_audits_its_refused_writes(repo):
    """Issue 24: a refused write is a refusal whatever the exit status, also in the test command's output."""
    from gtd.audit import AuditLog

    good = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                        {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [good]), test_command="echo > /etc/x; python3 -m unittest -q")
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "TODO.md")
    git(repo, "commit", "-q", "-m", "📝 plan: Counter")
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0].startswith("🔨 build:")
    assert "sandbox refused write /etc/x" in result.stderr
    assert ("write", "/etc/x") in [(e["kind"], e["target"]) for e in AuditLog(repo).read() if e["event"] == "violation"]


def test_a_test_command_that_hides_its_refused_writes_still_shows_and_audits_them(repo):
    """Issue 24, item 6: seen from the sandbox itself (gtd/sandbox/linux/write_watch.py), not from the output."""
    from gtd.audit import AuditLog

    good = {"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                        {"write": {"path": "test_count.py", "content": TEST_FILE}}]}
    setup_repo(repo, write_script(repo, [good]), test_command="(echo > /etc/x) 2>/dev/null; python3 -m unittest -q")
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "TODO.md")
    git(repo, "commit", "-q", "-m", "📝 plan: Counter")
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("sandbox refused write /etc/x") == 1, result.stderr
    assert ("write", "/etc/x") in [(e["kind"], e["target"]) for e in AuditLog(repo).read() if e["event"] == "violation"]
