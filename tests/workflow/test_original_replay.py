"""Repository states the original TypeScript gtd left behind (its commit subjects, its TODO.md
fixtures, its .gtdrc.json), replayed through the real CLI with the scripted provider: an unfinished
plan is built, not planned again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import git, run_gtd

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

SEED = """- add a `multiply` function to `src/math.py` that multiplies two numbers
- add a test for the `multiply` function in `tests/test_math.py`
"""
PLAN_TWO_PACKAGES = """# Math library

## Action Items

### Multiply

- [x] add a `multiply` function to `src/math.py` that multiplies two numbers
- [x] add a test for the `multiply` function in `tests/test_math.py`
- [x] add input validation for non-numeric arguments in `src/math.py`

### Subtract

- [ ] add a `subtract` function to `src/math.py` that subtracts two numbers
- [ ] add a test for the `subtract` function in `tests/test_math.py`
"""
MATH = "def add(a, b):\n    return a + b\n\n\ndef multiply(a, b):\n    return a * b\n"
SUBTRACTED = MATH + "\n\ndef subtract(a, b):\n    return a - b\n"


def commit(repo: Path, subject: str, files: dict[str, str] | None = None) -> None:
    for name, content in (files or {}).items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", subject)


def original_config(repo: Path, build_turns: list[dict], test_cmd: str = "true") -> None:
    """A .gtdrc.json as the original wrote it (example config of its `init`), plus gtd's `script`."""
    script = repo.parent / "script.json"
    script.write_text(json.dumps({"build": build_turns, "plan": [{"actions": [{"shell": "true"}]}]}))
    config = {"$schema": "https://raw.githubusercontent.com/pmelab/gtd/main/schema.json",
              "_comment": "This is an example config.", "file": "TODO.md", "agent": "scripted",
              "modelCommit": "anthropic/claude-haiku-4-5-20251001", "testCmd": test_cmd, "testRetries": 1,
              "agentInactivityTimeout": 300, "commitPrompt": "{{diff}}", "script": str(script)}
    commit(repo, "chore: gtd config", {".gtdrc.json": json.dumps(config, indent=2) + "\n",
                                       ".gitignore": "__pycache__/\n"})


def subjects(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


def test_second_build_after_feedback_builds_the_next_package(repo):
    """The original's 'Second build after feedback' history: 🌱 🤖 💬 👷 🤖 🔨 🤦 💬 🤖, with ### packages."""
    write_subtract = {"actions": [{"write": {"path": "src/math.py", "content": SUBTRACTED}}]}
    original_config(repo, [write_subtract])
    commit(repo, "🌱 seed: initial task list", {"TODO.md": SEED})
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLAN_TWO_PACKAGES.split("### Subtract")[0]})
    commit(repo, "💬 feedback: add error handling requirement",
           {"TODO.md": PLAN_TWO_PACKAGES.split("### Subtract")[0] + "> please also add error handling\n"})
    commit(repo, "👷 fix: formatting", {"src/math.py": "def add(a, b):\n    return a + b\n"})
    commit(repo, "🤖 plan: updated action items", {"TODO.md": PLAN_TWO_PACKAGES.split("### Subtract")[0]})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH})
    commit(repo, "🤦 human: extract code TODOs")
    commit(repo, "💬 feedback: add subtract function",
           {"TODO.md": PLAN_TWO_PACKAGES.split("### Subtract")[0] + "> please add a subtract function too\n"})
    commit(repo, "🤖 plan: add subtract action items", {"TODO.md": PLAN_TWO_PACKAGES})

    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert (status["next"], status["rule"]) == ("build", "unchecked-items")
    assert status["commit"]["subject"] == "🤖 plan: add subtract action items"

    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "the original gtd's 'testCmd' is read as 'testCommand'" in result.stderr
    head = subjects(repo)[0]
    assert head.startswith("🔨 build: Subtract: add a `subtract` function"), head  # one step for the whole package
    todo = (repo / "TODO.md").read_text()
    assert "- [ ]" not in todo and "- [x] add a test for the `subtract` function" in todo
    assert (repo / "src/math.py").read_text() == SUBTRACTED


def test_single_builds_one_package_of_two(repo):
    divide = {"when": "(Divide)", "actions": [{"write": {"path": "src/math.py", "content": MATH + "\n\ndef divide(a, b):\n    return a / b\n"}}]}
    write = {"actions": [{"write": {"path": "src/math.py", "content": MATH}}]}
    original_config(repo, [divide, write])
    commit(repo, "🌱 seed: initial task list", {"TODO.md": "- add a multiply function to src/math.py\n"})
    commit(repo, "🤖 plan: two packages", {"TODO.md": "# Math library\n\n## Action Items\n\n### Multiply\n\n"
                                                      "- [ ] add a `multiply` function to `src/math.py`\n\n### Divide\n\n"
                                                      "- [ ] add a `divide` function to `src/math.py`\n"})
    result = run_gtd("--single", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0] == "🔨 build: Multiply: add a `multiply` function to `src/math.py`"
    assert "- [ ] add a `divide` function" in (repo / "TODO.md").read_text()
    assert run_gtd("build", "--single", cwd=repo).returncode == 0
    assert subjects(repo)[0] == "🔨 build: Divide: add a `divide` function to `src/math.py`"
    assert "- [ ]" not in (repo / "TODO.md").read_text()


@pytest.mark.parametrize("subject,expected", [
    ("🌱 seed: initial task list", "plan"),
    ("🧭 explore: the codebase", "plan"),
    ("🤦 human feedback", "plan"),
    ("🎓 learn: persist learnings to AGENTS.md", "cleanup"),
])
def test_original_prefixes_are_read(repo, subject, expected):
    original_config(repo, [])
    commit(repo, subject, {"TODO.md": SEED if expected == "plan" else PLAN_TWO_PACKAGES.replace("- [ ]", "- [x]")})
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["next"] == expected, status


def test_original_fix_after_plan_keeps_building(repo):
    original_config(repo, [{"actions": [{"write": {"path": "src/math.py", "content": SUBTRACTED}}]}])
    commit(repo, "🤖 plan: add subtract", {"TODO.md": PLAN_TWO_PACKAGES})
    commit(repo, "👷 fix: tweak math.py", {"src/math.py": MATH})
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["next"] == "build" and status["commit"]["subject"] == "🤖 plan: add subtract"


def test_original_red_baseline_with_stop_exits_1_before_building(repo):
    """The original's baseline.feature: testCmd false, a 🤖 plan -> exit 1, no 🔨 commit."""
    original_config(repo, [{"actions": [{"write": {"path": "src/math.py", "content": MATH}}]}], test_cmd="false")
    config = json.loads((repo / ".gtdrc.json").read_text())
    commit(repo, "stop on red", {".gtdrc.json": json.dumps({**config, "baselineTests": "stop"})})
    commit(repo, "🤖 plan: add multiply function", {"TODO.md": "# Math library\n\n## Action Items\n\n### Multiply\n\n"
                                                               "- [ ] add a `multiply` function to `src/math.py`\n"})
    result = run_gtd(cwd=repo)
    assert result.returncode == 1 and "baseline tests FAIL" in result.stderr
    assert not any(s.startswith("🔨") for s in subjects(repo))


def test_original_red_baseline_headless_exits_1_before_the_agent_runs(repo):
    """The original's baseline.feature with its default config: red tests, a 🤖 plan, no terminal ->
    exit 1 and no agent run; `gtd --build-on-red` (or baselineTests: build) builds on red."""
    original_config(repo, [{"actions": [{"write": {"path": "src/math.py", "content": MATH}}]}],
                    test_cmd="test -f src/math.py")
    commit(repo, "🤖 plan: add multiply function", {"TODO.md": "# Math library\n\n## Action Items\n\n### Multiply\n\n"
                                                               "- [ ] add a `multiply` function to `src/math.py`\n"})
    result = run_gtd(cwd=repo)
    assert result.returncode == 1 and "baseline tests FAIL" in result.stderr, result.stderr
    assert "build (level" not in result.stderr.split("baseline tests FAIL")[1]  # no agent started after it
    assert subjects(repo)[0] == "🤖 plan: add multiply function" and not (repo / "src/math.py").exists()
    result = run_gtd("--build-on-red", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0].startswith("🔨 build: Multiply")
    assert "Baseline: the tests were already red" in git(repo, "log", "-1", "--format=%b")


def test_red_baseline_in_a_terminal_still_asks(repo):
    """The terminal question stays: `n` stops with exit 1 before any agent run."""
    import sys

    import pexpect
    from support import spawn_in_terminal

    original_config(repo, [{"actions": [{"write": {"path": "src/math.py", "content": MATH}}]}], test_cmd="false")
    commit(repo, "🤖 plan: add multiply function", {"TODO.md": "# Math library\n\n## Action Items\n\n"
                                                               "- [ ] add a `multiply` function to `src/math.py`\n"})
    child = spawn_in_terminal(sys.executable, ["-m", "gtd", "build"], cwd=str(repo), encoding="utf-8", timeout=60)
    child.expect("Build anyway")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and not (repo / "src/math.py").exists()
    assert subjects(repo)[0] == "🤖 plan: add multiply function"


def test_rejected_plan_names_its_problems(repo):
    original_config(repo, [])
    commit(repo, "🤖 plan: broken", {"TODO.md": "# Math library\n\nno action items at all\n"})
    result = run_gtd("build", cwd=repo)
    assert result.returncode == 1
    assert "TODO.md is not a plan gtd can build: missing the section `## Action items`" in result.stderr


def test_original_fix_with_nothing_left_to_build_is_checked(repo):
    """The original's test-fix.feature: a 👷 fix at HEAD, tests red -> exit 1, no step after it."""
    original_config(repo, [], test_cmd="echo still failing; false")
    commit(repo, "🤖 plan: add multiply", {"TODO.md": PLAN_TWO_PACKAGES.replace("- [ ]", "- [x]")})
    commit(repo, "👷 fix: tweak math.py", {"src/math.py": MATH + "# human fix\n"})
    result = run_gtd(cwd=repo)
    assert result.returncode == 1 and "tests fail after your fix" in result.stderr and "still failing" in result.stderr
    assert subjects(repo)[0] == "👷 fix: tweak math.py"


def test_bare_python_tests_are_detected_and_a_red_build_is_not_committed(repo):
    """Only tests/test_*.py (no pyproject.toml, setup.py, conftest.py): gtd runs them with unittest when
    no pytest is at hand, so the agent's breaking change is not committed as if green."""
    # (another size than the original: written in the second the baseline compiled it, a same-size file
    # would be run from the stale __pycache__ .pyc, which Python checks by mtime and size only)
    broken = {"actions": [{"write": {"path": "src/math.py", "content": "def add(a, b):\n    return a - b - 1\n"}}]}
    original_config(repo, [broken])
    config = json.loads((repo / ".gtdrc.json").read_text())
    del config["testCmd"]
    commit(repo, "🤖 plan: add multiply", {
        ".gtdrc.json": json.dumps(config), "src/__init__.py": "", "src/math.py": "def add(a, b):\n    return a + b\n",
        "tests/test_math.py": "import unittest\n\nfrom src.math import add\n\n\nclass T(unittest.TestCase):\n"
                              "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        "TODO.md": "# Math\n\n## Action Items\n\n- [ ] add a `multiply` function to `src/math.py`\n"})
    result = run_gtd("build", cwd=repo, env={"PATH": "/usr/bin:/bin"})
    assert "test command: python3 -m unittest discover -s tests (detected from tests/test_*.py files; " \
           "no pytest for python3 on PATH, so unittest" in result.stderr
    assert "✓ baseline tests pass" in result.stderr
    assert result.returncode == 1 and "tests still fail" in result.stderr and "FAILED (failures=1)" in result.stderr
    assert subjects(repo)[0] == "🤖 plan: add multiply"


def test_a_minimal_plan_is_accepted_and_completed(repo):
    """The original's lint: `## Action Items` with tested items is a valid plan; Open Questions and
    Learnings may be missing. gtd adds them empty instead of asking the agent again."""
    minimal = "# Math library\n\n## Action Items\n\n- [ ] add a `multiply` function to `src/math.py`\n" \
              "  - Tests: `multiply(2, 3) == 6`\n"
    original_config(repo, [])
    script = json.loads((repo.parent / "script.json").read_text())
    script["plan"] = [{"actions": [{"write": {"path": "TODO.md", "content": minimal}}]}]
    (repo.parent / "script.json").write_text(json.dumps(script))
    commit(repo, "🌱 seed: initial task list", {"TODO.md": SEED})
    result = run_gtd("plan", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "not valid yet" not in result.stderr
    assert subjects(repo)[0] == "📝 plan: Math library"
    todo = (repo / "TODO.md").read_text()
    assert todo.startswith(minimal.rstrip("\n")) and todo.endswith("## Open questions\n\n## Learnings\n")


PLANNED = "# Math library\n\n## Action Items\n\n### Multiply\n\n" \
          "- [ ] add a `multiply` function to `src/math.py` that multiplies two numbers\n" \
          "  - Tests: `multiply(3, 4) == 12`\n"


def _replan_script(repo: Path, plan_text: str) -> None:
    script = json.loads((repo.parent / "script.json").read_text())
    script["plan"] = [{"actions": [{"write": {"path": "TODO.md", "content": plan_text}}]}]
    (repo.parent / "script.json").write_text(json.dumps(script))


def test_feedback_and_replan(repo):
    """The original's 'Feedback and re-plan': a blockquote appended to TODO.md and a code edit ->
    the code part a fix, the TODO.md part feedback, then a new plan."""
    original_config(repo, [])
    _replan_script(repo, PLANNED + "- [ ] add error handling for non-numeric inputs\n  - Tests: raises TypeError\n")
    commit(repo, "🌱 seed: initial task list", {"TODO.md": SEED, "src/math.py": "def add(a, b):\n    return a + b\n"})
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    (repo / "TODO.md").write_text(PLANNED + "\n> please also add error handling for non-numeric inputs\n")
    (repo / "src/math.py").write_text("def add(a, b):\n    return a + b\n\n")
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert (status["next"], status["pending_edits"]["fix"], status["pending_edits"]["feedback"]) == \
        ("plan", ["src/math.py"], ["TODO.md"]), status
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[:3] == ["📝 plan: Math library", "💬 feedback: TODO.md", "🔧 fix: src/math.py"]
    assert "> please also add" not in (repo / "TODO.md").read_text()
    assert "> please also add" in git(repo, "show", "HEAD~1", "--", "TODO.md")


@pytest.mark.parametrize("edit", [
    pytest.param(lambda t: t.replace("- [ ] add a `multiply`", "- [x] add a `multiply`") + "\n## Learnings\n\n- keep it small\n",
                 id="ticks and learnings"),
    pytest.param(lambda t: t.replace("  - Tests:", "  - done by hand, see commit abc\n  - Tests:"), id="a note under an item"),
    pytest.param(lambda t: t + "\nalso support floats\n", id="plain text"),
])
def test_todo_md_edits_are_feedback_and_lead_to_plan(repo, edit):
    original_config(repo, [])
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH})
    (repo / "TODO.md").write_text(edit(PLANNED))
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert (status["next"], status["pending_edits"]["feedback"]) == ("plan", ["TODO.md"]), status


DONE = PLANNED.replace("- [ ]", "- [x]") + "\n## Learnings\n\n- use named constants\n"


def test_learnings_only_feedback_commit_leads_to_learn(repo):
    """The original's InferStep: a 💬/🤦 commit that only changed TODO.md's Learnings -> learn."""
    original_config(repo, [])
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH, "TODO.md": DONE})
    commit(repo, "🤦 human: add a learning", {"TODO.md": DONE + "- never use magic numbers\n"})
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert (status["next"], status["rule"]) == ("learn", "learnings-feedback"), status


def test_learnings_only_edit_after_feedback_is_committed_as_feedback_then_learns(repo):
    original_config(repo, [])
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH, "TODO.md": DONE})
    commit(repo, "💬 feedback: a learning", {"TODO.md": DONE + "- never use magic numbers\n"})
    (repo / "TODO.md").write_text(DONE + "- never use magic numbers\n- prefer pure functions\n")
    script = json.loads((repo.parent / "script.json").read_text())
    script["learn"] = [{"actions": [{"write": {"path": "AGENTS.md", "content": "- prefer pure functions\n"}}]}]
    (repo.parent / "script.json").write_text(json.dumps(script))
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert (status["next"], status["pending_edits"]["feedback"]) == ("learn", ["TODO.md"]), status
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [s.split(":")[0] for s in subjects(repo)[:3]] == ["🧹 cleanup", "📚 learn", "💬 feedback"]


def test_single_stops_after_the_feedback_commit(repo):
    """The original's '--single stops after commit-feedback without chaining to next step'."""
    original_config(repo, [])
    commit(repo, "🌱 seed: initial task list", {"TODO.md": SEED, "src/math.py": "def add(a, b):\n    return a + b\n"})
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    (repo / "TODO.md").write_text(PLANNED + "\n> please also add error handling for non-numeric inputs\n")
    (repo / "src/math.py").write_text("def add(a, b):\n    return a + b\n\n")
    result = run_gtd("--single", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[:2] == ["💬 feedback: TODO.md", "🔧 fix: src/math.py"]
    assert "next is plan" in result.stderr and "plan (level" not in result.stderr
    assert git(repo, "status", "--porcelain") == ""


def test_formatting_is_normalized_before_commit(repo):
    """The original's 'Formatting is normalized before commit': the staged seed and the plan are
    committed as the formatter writes them."""
    original_config(repo, [])
    _replan_script(repo, PLANNED.replace("that multiplies", "that   multiplies") + "\n\n\n## Learnings\n")
    (repo / "TODO.md").write_text("- add a `multiply` function to `src/math.py`   that multiplies    two numbers\n"
                                  "- add a test for the `multiply` function in `tests/test_math.py`\n")
    git(repo, "add", "TODO.md")
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [s[0] for s in subjects(repo)[:2]] == ["📝", "💬"]
    seed = git(repo, "show", "HEAD~1:TODO.md")
    assert "that multiplies two numbers" in seed and "  that" not in seed
    planned = git(repo, "show", "HEAD:TODO.md")
    assert "that multiplies two numbers" in planned and "\n\n\n" not in planned


def test_cleanup_body_records_the_seed(repo):
    """The original's cleanup.feature: the closing commit's body has `## Seed` with the seed's lines."""
    original_config(repo, [])
    commit(repo, "🌱 seed: initial", {"TODO.md": "- add a `multiply` function to `src/math.py` that multiplies two numbers\n"})
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH, "TODO.md": PLANNED.replace("- [ ]", "- [x]")})
    commit(repo, "🎓 learn: persist learnings to AGENTS.md", {"AGENTS.md": "- keep it small\n"})
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0].startswith("🧹 cleanup") and not (repo / "TODO.md").exists()
    body = git(repo, "log", "-1", "--format=%b")
    assert body.startswith("## Seed\n\n- add a `multiply` function to `src/math.py` that multiplies two numbers\n")
    assert "Built:\n- add a `multiply` function" in body


def test_cleanup_body_has_no_seed_without_one(repo):
    """No seed since the last cleanup (the original's 'falls back ... when no seed in history')."""
    original_config(repo, [])
    commit(repo, "🌱 seed: an older plan", {"TODO.md": "- an older goal\n"})
    commit(repo, "🧹 cleanup: remove TODO.md (older)")
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED.replace("- [ ]", "- [x]")})
    commit(repo, "🎓 learn: persist learnings to AGENTS.md")
    assert run_gtd(cwd=repo).returncode == 0
    body = git(repo, "log", "-1", "--format=%b")
    assert "## Seed" not in body and "an older goal" not in body


MAGIC = "# TODO: never use magic numbers, always use named constants\n"


@pytest.mark.parametrize("how", ["committed by the original", "uncommitted"])
def test_code_todos_move_into_the_plan_and_out_of_the_code(repo, how):
    """The original's 'Code TODOs committed': a marker the person added (a 🤦 commit, or edits gtd
    commits as feedback) leaves the code and lives in the plan, even when the plan does not cite it."""
    original_config(repo, [])
    _replan_script(repo, PLANNED.replace("- [ ]", "- [x]") + "\n### Subtract\n\n- [ ] add a `subtract` function\n"
                   "  - Tests: `subtract(3, 1) == 2`\n")
    commit(repo, "🌱 seed: initial task list", {"TODO.md": SEED})
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH, "TODO.md": PLANNED.replace("- [ ]", "- [x]")})
    commit(repo, "# a TODO: the project had before stays", {"src/old.py": "x = 1  # TODO: an old note\n"})
    edits = {"src/math.py": MAGIC + MATH + "# fixed\n",
             "TODO.md": PLANNED.replace("- [ ]", "- [x]") + "\n> please add a subtract function too\n"}
    if how == "uncommitted":
        for name, text in edits.items():
            (repo / name).write_text(text)
    else:
        commit(repo, "🤦 human: extract code TODOs", edits)
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert subjects(repo)[0] == "📝 plan: Math library"
    assert "TODO: never use magic numbers" not in (repo / "src/math.py").read_text()
    assert (repo / "src/math.py").read_text().endswith("# fixed\n")
    todo = (repo / "TODO.md").read_text()
    assert "- [ ] never use magic numbers, always use named constants (from `src/math.py:1`)" in todo
    assert (repo / "src/old.py").read_text() == "x = 1  # TODO: an old note\n"


@pytest.mark.parametrize("phase,start", [
    ("build", "🤖 plan: add multiply"),  # a plan to build
    ("build", "👷 fix: tweak math.py"),  # the original's fix with items left: the build carries on
    ("plan", "🌱 seed: initial task list"),
])
def test_inactivity_ends_with_exit_6_and_no_step_commit(repo, phase, start):
    """The original gave up on a silent agent (agentInactivityTimeout) without committing the step:
    gtd exits 6 (timeout), commits no 🔨/📝, and leaves the agent's partial work for the next run."""
    silent = {"actions": [{"write": {"path": "src/math.py", "content": MATH}}, {"tool": {"name": "Compile",
                                                                                        "input": {"command": "make"}}}]}
    original_config(repo, [silent] if phase == "build" else [])
    config = json.loads((repo / ".gtdrc.json").read_text())
    script = json.loads((repo.parent / "script.json").read_text())
    if phase == "plan":
        script["plan"] = [{"actions": [{"write": {"path": "TODO.md", "content": PLANNED}}, *silent["actions"][1:]]}]
    (repo.parent / "script.json").write_text(json.dumps(script))
    commit(repo, "chore: quick timeouts", {".gtdrc.json": json.dumps({**config, "agentInactivityTimeout": 30,
                                                                      "timeouts": {"toolSeconds": 1}})})
    commit(repo, "🤖 plan: add multiply" if phase == "build" else start, {"TODO.md": PLANNED if phase == "build" else SEED})
    if start.startswith("👷"):
        commit(repo, start, {"src/old.py": "x = 1\n"})
    before = subjects(repo)
    result = run_gtd("--all", cwd=repo)
    assert result.returncode == 6, result.stderr
    assert "no output from scripted for 1s" in " ".join(result.stderr.split())
    assert subjects(repo) == before


def test_code_only_todo_comment_survives_the_feedback_commit_and_moves_into_the_plan(repo):
    """The original's todo-comments.feature: a staged code-only marker -> a feedback commit whose diff
    has it, then a plan that holds it while the code no longer does."""
    original_config(repo, [])
    _replan_script(repo, "# Math Library\n\n## Action Items\n\n- [ ] add a subtract function to src/math.py\n"
                   "  - Tests: `subtract(3, 1) == 2`\n")
    commit(repo, "🤖 plan: initial plan", {"TODO.md": "# Math Library\n\n## Action Items\n\n"
                                                     "- [ ] add a subtract function to src/math.py\n",
                                         "src/math.py": "def add(a, b):\n    return a + b\n"})
    (repo / "src/math.py").write_text("def add(a, b):\n    return a + b\n# TODO: add unit tests for the add function\n")
    git(repo, "add", "src/math.py")
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [s[0] for s in subjects(repo)[:2]] == ["📝", "💬"]
    assert "+# TODO: add unit tests" in git(repo, "show", "HEAD~1")
    assert "TODO:" not in (repo / "src/math.py").read_text()
    assert "unit tests" in (repo / "TODO.md").read_text()


def test_learn_and_cleanup_after_a_learning_is_removed(repo):
    """The original's 'Learn and cleanup': all built, the person drops a learning -> learn, then cleanup."""
    original_config(repo, [])
    script = json.loads((repo.parent / "script.json").read_text())
    script["learn"] = [{"actions": [{"write": {"path": "AGENTS.md", "content": "- validate inputs at boundaries\n"}}]}]
    (repo.parent / "script.json").write_text(json.dumps(script))
    learned = "\n## Learnings\n\n- avoid magic numbers in business logic\n- always validate inputs at system boundaries\n"
    commit(repo, "🌱 seed: initial task list", {"TODO.md": SEED})
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function",
           {"src/math.py": MATH, "TODO.md": PLANNED.replace("- [ ]", "- [x]") + learned})
    (repo / "TODO.md").write_text(PLANNED.replace("- [ ]", "- [x]") + learned.replace(
        "- avoid magic numbers in business logic\n", ""))
    result = run_gtd(cwd=repo)
    assert result.returncode == 0, result.stderr
    assert [s.split(":")[0] for s in subjects(repo)[:3]] == ["🧹 cleanup", "📚 learn", "💬 feedback"]
    assert (repo / "AGENTS.md").exists() and not (repo / "TODO.md").exists()


def test_a_learning_after_unplanned_feedback_still_plans(repo):
    """A learnings-only edit never skips feedback that was not planned yet (learn would remove TODO.md
    with the person's request in it)."""
    original_config(repo, [])
    commit(repo, "🤖 plan: structured action items", {"TODO.md": PLANNED})
    commit(repo, "🔨 build: implement multiply function", {"src/math.py": MATH, "TODO.md": DONE})
    commit(repo, "💬 feedback: please add subtract", {"TODO.md": DONE + "\n> please add a subtract function\n"})
    (repo / "TODO.md").write_text(DONE.replace("- use named constants\n", "- use named constants\n- prefer pure functions\n")
                                  + "\n> please add a subtract function\n")
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["next"] == "plan", status
    commit(repo, "💬 feedback: a learning", {})
    assert json.loads(run_gtd("status", "--json", cwd=repo).stdout)["next"] == "plan"
