"""The baseline run is not repeated on code a green full run already tested (issue 24, item 9): a new plan's
first build skips it, in one line, when only gtd's own files (TODO.md) changed since; any change to the code
(here the person's 🔧 fix) makes it run again."""

from __future__ import annotations

import json
import shutil

import pytest
from support import git, run_gtd

from gtd.audit import AuditLog

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def plan_text(title: str, done: list[str], todo: str) -> str:
    items = "".join(f"- [x] {item}\n  - Tests: t\n" for item in done) + f"- [ ] {todo}\n  - Tests: t\n"
    return f"# {title}\n\n## Action items\n{items}\n## Open questions\n\n## Learnings\n"


def baselines(repo) -> list[str]:
    return [e["event"] for e in AuditLog(repo).read() if e["event"] in ("baseline_tests", "baseline_skipped")]


def test_a_new_plans_baseline_is_skipped_on_code_a_green_run_tested(repo):
    script = {"plan": [{"when": "third goal", "actions": [{"write": {"path": "TODO.md", "content": plan_text(
                           "Three", ["Add one", "Add two"], "Add three")}}]},
                       {"when": "second goal", "actions": [{"write": {"path": "TODO.md", "content": plan_text(
                           "Two", ["Add one"], "Add two")}}]},
                       {"actions": [{"write": {"path": "TODO.md", "content": plan_text("One", [], "Add one")}}]}],
              "build": [{"when": "Add three", "actions": [{"write": {"path": "three.txt", "content": "3\n"}}]},
                        {"when": "Add two", "actions": [{"write": {"path": "two.txt", "content": "2\n"}}]},
                        {"actions": [{"write": {"path": "one.txt", "content": "1\n"}}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json"),
                                                  "testCommand": "test -f README.md"}))
    (repo / "TODO.md").write_text("# One\n")
    assert run_gtd("plan", cwd=repo).returncode == 0
    first = run_gtd("build", cwd=repo)
    assert first.returncode == 0, first.stderr
    assert baselines(repo) == ["baseline_tests"]  # nothing green recorded yet: the baseline runs
    assert "baseline: skipped" not in first.stderr

    assert run_gtd("plan", "second goal", cwd=repo).returncode == 0  # only TODO.md changed since the green run
    second = run_gtd("build", cwd=repo)
    assert second.returncode == 0, second.stderr
    assert baselines(repo) == ["baseline_tests", "baseline_skipped"]
    skipped = [line for line in second.stderr.splitlines() if "baseline" in line]
    assert len(skipped) == 1 and "baseline: skipped: the last green full test run tested exactly this code" in \
        skipped[0], second.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "🔨 build: Add two"

    (repo / "README.md").write_text("# project, edited by hand\n")  # the code changed: the baseline runs again
    assert run_gtd("plan", "third goal", cwd=repo).returncode == 0
    third = run_gtd("build", cwd=repo)
    assert third.returncode == 0, third.stderr
    assert baselines(repo) == ["baseline_tests", "baseline_skipped", "baseline_tests"]
    assert "baseline: running the tests before the first build step" in third.stderr
