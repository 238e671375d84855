"""Issue 22, class 2: a FIFO the agent leaves as `.gitignore`, a subdirectory's `.gitattributes` or
`.mailmap` made gtd's own `git status`/`add` wait for ever (a headless `gtd build` never ended, nor the
person's next `gtd status`). gtd moves FIFOs, sockets and device nodes out of the work tree before host
git runs and reports them; every host git run is bounded by a timeout that ends in a clear error."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from support import git, run_gtd

from gtd.sandbox.host import host_git, special_files
from gtd.audit import AuditLog
from gtd.errors import GtdError
from gtd.paths import project_state_dir
from gtd.workflow import git as gitops

FIFOS = (".gitignore", "sub/.gitattributes", ".mailmap")
PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: test_count.py\n\n" \
       "## Open questions\n\n## Learnings\n"
TEST_FILE = "import unittest\nfrom count import add\n\n\nclass T(unittest.TestCase):\n" \
            "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"


def _plant(repo: Path) -> None:
    for name in FIFOS:
        (repo / name).parent.mkdir(exist_ok=True)
        os.mkfifo(repo / name)


def _quarantined(repo: Path) -> set[str]:
    base = project_state_dir(repo) / "quarantine"
    return {str(Path(*p.relative_to(base).parts[1:])) for p in base.rglob("*.quarantined")}  # below <time>/


def _reported(repo: Path) -> set[str]:
    return {e["path"] for e in AuditLog(repo).read() if e["event"] == "special_file" and e["kind"] == "a FIFO"}


def test_gtd_status_ends_and_reports_the_fifos(repo):
    _plant(repo)  # as a gtd killed mid-build leaves them
    result = run_gtd("status", cwd=repo, timeout=60)  # the old code: TimeoutExpired (git waits on .gitignore)
    assert result.returncode == 0, result.stderr
    assert "next:" in result.stdout
    for name in FIFOS:
        assert f"gtd: {name} is a FIFO in the work tree" in result.stderr
        assert not os.path.lexists(repo / name)
    assert _quarantined(repo) == {f"{name}.quarantined" for name in FIFOS}
    assert _reported(repo) == set(FIFOS)
    assert run_gtd("status", cwd=repo, timeout=60).stderr == ""  # reported once, not on every run


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_build_whose_agent_made_fifos_commits_and_ends(repo):
    script = repo.parent / "script.json"
    script.write_text(json.dumps({
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
        "build": [{"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
                               {"write": {"path": "test_count.py", "content": TEST_FILE}},
                               {"shell": "mkdir -p sub && mkfifo .gitignore sub/.gitattributes .mailmap"}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script),
                                                  "testCommand": "python3 -B -m unittest -q", "testRetries": 1}))
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    assert run_gtd("plan", cwd=repo, timeout=120).returncode == 0
    result = run_gtd("build", cwd=repo, timeout=120)  # the old code: TimeoutExpired (its `git add -A` waits)
    assert result.returncode == 0, result.stderr
    assert git(repo, "log", "-1", "--format=%s").startswith("🔨 build:")
    assert set(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == {"TODO.md", "count.py", "test_count.py"}
    for name in FIFOS:
        assert f"{name} is a FIFO in the work tree" in result.stderr + result.stdout
        assert not os.path.lexists(repo / name)
    assert _reported(repo) == set(FIFOS)


def test_sockets_are_moved_and_nothing_is_followed(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / ".gitignore")
    (repo / "linked").symlink_to(outside)  # a symlinked directory: git does not enter it, nor does the sweep
    (repo / "deep" / "er").mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(repo / "deep" / "er" / "agent.sock"))
    server.close()
    (repo / "deep" / "plain.txt").write_text("kept\n")
    special_files.forget()
    moved = special_files.sweep(repo)
    assert [(path, kind) for path, kind, _ in moved] == [("deep/er/agent.sock", "a socket")]
    assert not os.path.lexists(repo / "deep" / "er" / "agent.sock")
    assert os.path.exists(outside / ".gitignore") and (repo / "deep" / "plain.txt").read_text() == "kept\n"


def test_a_git_run_that_waits_ends_in_an_error_naming_it(repo, monkeypatch):
    """A FIFO where the sweep does not look (the person's own .git/info/exclude, out of the agent's reach):
    git waits on it; gtd stops git and says which command and after how long."""
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").unlink(missing_ok=True)
    os.mkfifo(repo / ".git" / "info" / "exclude")
    monkeypatch.setattr(host_git, "TIMEOUT_SECONDS", 2.0)
    with pytest.raises(GtdError, match=r"git status --porcelain=v1 -z --untracked-files=all did not finish within 2 s"):
        gitops.changes(repo)
    os.mkfifo(repo / ".git" / "people")
    git(repo, "config", "mailmap.file", ".git/people")  # the person's config: `git log` reads it
    with pytest.raises(GtdError, match=r"git log -5 --format=%s did not finish within 2 s"):
        gitops.subjects(repo, 5)


def test_a_wide_tree_is_swept_whole(repo):
    """node_modules holds thousands of sibling directories: the sweep holds one open at a time, so none is
    skipped for want of file descriptors."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for i in range(300):
        (repo / "node_modules" / f"p{i}").mkdir(parents=True)
        os.mkfifo(repo / "node_modules" / f"p{i}" / ".gitattributes")
    special_files.forget()
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        moved = special_files.sweep(repo)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert sorted(path for path, _, _ in moved) == sorted(f"node_modules/p{i}/.gitattributes" for i in range(300))
    assert not any((repo / "node_modules" / f"p{i}" / ".gitattributes").exists() for i in range(300))


def test_a_fifo_made_after_the_sweep_holds_a_snapshot_only_briefly(repo, monkeypatch):
    """The agent runs on while gtd records its work tree: a FIFO it makes at .gitignore between the sweep and
    git's open of it held the snapshot's `git add -A` for the whole git timeout (300 s; a build under load
    hit the test's 120 s). The snapshot's run is bounded short and tried once more, which sweeps again."""
    import threading

    from gtd.workflow import leftovers

    real_sweep = special_files.sweep
    calls = []

    def late_fifo(top):  # the sweeps before the first `add -A` find nothing: the FIFO comes right after them
        calls.append(top)
        if len(calls) <= 2:  # `rev-parse` (the index to start from), then `add -A` itself
            return []
        return real_sweep(top)

    special_files.forget()
    os.mkfifo(repo / ".gitignore")
    monkeypatch.setattr(special_files, "sweep", late_fifo)
    monkeypatch.setattr(leftovers, "SNAPSHOT_GIT_SECONDS", 2.0)
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.append(
        leftovers.worktree_tree(repo, timeout=leftovers.SNAPSHOT_GIT_SECONDS)), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():  # the old code: git waits on the FIFO; let it go before failing
        with open(repo / ".gitignore", "w"):
            pass
    assert done and len(done[0]) == 40, "the snapshot waited on the agent's FIFO"
    assert not os.path.lexists(repo / ".gitignore")
