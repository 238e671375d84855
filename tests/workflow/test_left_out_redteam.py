"""Issue 22, class 4: with ~200 generated fixture files in a tracked `tests/`, the build's bulk leave-out
ran `git rm -r --cached tests/` (the person's tracked test file was deleted in the 🔨 commit) and wrote
`/tests/` into `.git/info/exclude` (an agent file there reached no commit and was hidden from `git
status`). gtd never untracks a tracked file and never writes info/exclude; what it leaves out stays
visible in `git status`, and the step's summary names it (a count and the top directories)."""

from __future__ import annotations

import json
import shutil

import pytest
from support import git, run_gtd

from gtd.workflow import git as gitops
from gtd.workflow.unsafe import find_unsafe

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: tests/test_count.py\n\n" \
       "## Open questions\n\n## Learnings\n"
TEST_FILE = "import unittest\nfrom count import add\n\n\nclass T(unittest.TestCase):\n" \
            "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
GENERATE = "mkdir -p tests/fixtures/cases && for i in $(seq 1 200); do echo $i > tests/fixtures/cases/f$i.json; done"


def _exclude(repo) -> str:
    path = repo / ".git" / "info" / "exclude"
    return path.read_text() if path.exists() else ""


def test_leaving_out_a_directory_never_untracks_what_is_tracked_in_it(repo):
    """The old leave-out of a directory name untracked every tracked file below it."""
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("def test_ok():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tests")
    (repo / "tests" / "test_app.py").write_text("def test_ok():\n    assert True\n")  # changed: committed
    for i in range(3):
        (repo / "tests" / f"gen{i}.json").write_text("{}\n")
    sha = gitops.commit_all(repo, "build", leave_out=["tests/"])
    assert gitops.commit_files(repo, sha) == ["M\ttests/test_app.py"]
    assert git(repo, "ls-files", "tests") == "tests/test_app.py\n"
    assert sorted(c.path for c in gitops.changes(repo)) == [f"tests/gen{i}.json" for i in range(3)]


def test_generated_files_in_a_tracked_directory_are_grouped_by_the_new_directory():
    untracked = [f"tests/fixtures/cases/f{i}.json" for i in range(200)] + ["tests/test_count.py", "count.py"]
    assert [(e.path, e.files) for e in find_unsafe(untracked, {"tests"})] == [("tests/fixtures/", 200)]
    assert find_unsafe([f"vendor/lib/f{i}.go" for i in range(3)], {"vendor", "vendor/lib"}) == []  # tracked: the person's


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_build_leaves_generated_fixtures_out_visibly_and_keeps_the_tracked_tests(repo):
    script = repo.parent / "script.json"
    script.write_text(json.dumps({
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
        "build": [{"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                               {"write": {"path": "tests/test_count.py", "content": TEST_FILE}},
                               {"shell": GENERATE}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script),
                                                  "testCommand": "python3 -B -m unittest discover -q -s tests -t .",
                                                  "testRetries": 1}))
    (repo / "tests").mkdir()
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_app.py").write_text("import unittest\n\n\nclass A(unittest.TestCase):\n"
                                                "    def test_ok(self):\n        pass\n")
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    exclude = _exclude(repo)
    assert run_gtd("plan", cwd=repo, timeout=120).returncode == 0
    result = run_gtd("build", cwd=repo, timeout=180)
    assert result.returncode == 0, result.stderr
    built = git(repo, "show", "--name-status", "--format=%s%n%b", "HEAD")
    assert built.startswith("🔨 build:")
    assert "D\ttests/test_app.py" not in built and "tests/test_app.py" in git(repo, "ls-files")
    assert "A\ttests/test_count.py" in built and "A\tcount.py" in built  # the agent's own work is committed
    assert "Left out (uncommitted): 200 files: tests/fixtures/ (200)" in built
    assert _exclude(repo) == exclude  # info/exclude untouched
    status = git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert len(status) == 200 and all(line.startswith("?? tests/fixtures/cases/") for line in status)
    said = " ".join((result.stderr + result.stdout).split())
    assert "left out of the commit, uncommitted (see `git status`): build: 200 files: tests/fixtures/ (200)" in said
    # the next run neither takes them for the person's edits nor stops on them, nor commits them
    status = json.loads(run_gtd("status", "--json", cwd=repo).stdout)
    assert status["pending_edits"] is None


def test_a_left_out_file_the_person_stages_is_committed(repo):
    """gtd remembers what a build left out; once the person `git add`s one of them, it is theirs to commit."""
    from gtd.workflow.unsafe import remember_left_out

    (repo / "gen").mkdir()
    for i in range(2):
        (repo / "gen" / f"f{i}.json").write_text("{}\n")
    remember_left_out(repo, ["gen/f0.json", "gen/f1.json"])
    assert gitops.commit_all(repo, "nothing new") is None  # both still left out
    git(repo, "add", "gen/f1.json")
    sha = gitops.commit_all(repo, "fix")
    assert gitops.commit_files(repo, sha) == ["A\tgen/f1.json"]
    assert [(c.status, c.path) for c in gitops.changes(repo)] == [("??", "gen/f0.json")]
