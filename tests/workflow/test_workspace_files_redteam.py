"""Red team: gtd's own reads and writes of workspace files never follow a symlink, never open a
FIFO, never read without a cap (issue 9, class 1). The real CLI, the scripted agent, the real sandbox.

The scripted agent plays the first turn whose `when` text occurs in its prompt: a turn keyed on a
secret writes a plan titled "Leaked", so a secret reaching the prompt shows up as a commit."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support import explain, git, run_gtd

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

PLAN = """# Counter

## Action items
- [ ] Add count.py with add(a, b)
  - Tests: test_count.py

## Open questions

## Learnings
"""
LEAKED_PLAN = PLAN.replace("# Counter", "# Leaked")
SECRET = "sk-secret-7f3a9c-never-in-a-prompt"


def configure(repo: Path, plan_turns: list[dict], build_turns: list[dict] | None = None) -> None:
    script = repo.parent / "script.json"
    script.write_text(json.dumps({"plan": plan_turns, "build": build_turns or [], "learn": []}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script),
                                                  "testCommand": "true"}))


def leak_watch(needle: str) -> list[dict]:
    return [{"when": needle, "actions": [{"write": {"path": "TODO.md", "content": LEAKED_PLAN}}]},
            {"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}]


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def test_symlinked_agents_md_to_a_secret_never_reaches_the_prompt(repo, tmp_path):
    secret = tmp_path / "id_ed25519"
    secret.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (repo / "AGENTS.md").symlink_to(secret)  # as a cloned repository could ship it
    configure(repo, leak_watch(SECRET))
    commit_all(repo, "clone")

    result = run_gtd("plan", "Add a counter", cwd=repo)

    log = git(repo, "log", "--format=%s%n%b")
    assert "Leaked" not in log, explain(result)
    assert result.returncode == 1, explain(result)
    assert "AGENTS.md is a symlink; gtd never follows symlinks in the workspace" in result.stderr
    assert SECRET not in result.stderr + result.stdout  # the error names the file, never its content


def test_agents_md_to_proc_self_environ_never_reaches_the_prompt(repo):
    (repo / "AGENTS.md").symlink_to("/proc/self/environ")
    configure(repo, leak_watch(SECRET))
    commit_all(repo, "clone")

    result = run_gtd("plan", "Add a counter", cwd=repo, env={"GTD_TEST_TOKEN": SECRET})

    assert "Leaked" not in git(repo, "log", "--format=%s"), explain(result)
    assert result.returncode == 1, explain(result)
    assert "AGENTS.md is a symlink" in result.stderr
    assert SECRET not in result.stderr + result.stdout


def test_symlinked_todo_md_is_never_appended_to(repo, tmp_path):
    outside = tmp_path / "notes.md"
    outside.write_text("# my private notes\n")
    before = outside.read_bytes()
    (repo / "TODO.md").symlink_to(outside)
    configure(repo, leak_watch(SECRET))
    commit_all(repo, "clone")

    result = run_gtd("plan", "Add a counter", cwd=repo)

    assert outside.read_bytes() == before, explain(result)
    assert result.returncode == 1, explain(result)
    assert "TODO.md is a symlink" in result.stderr


def test_symlinked_todo_md_is_never_ticked(repo, tmp_path):
    """A plan committed as a symlink to a file outside: gtd neither builds from it nor ticks it."""
    outside = tmp_path / "plan.md"
    outside.write_text(PLAN)
    before = outside.read_bytes()
    (repo / "TODO.md").symlink_to(outside)
    build = [{"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}}]}]
    configure(repo, leak_watch(SECRET), build)
    commit_all(repo, "📝 plan: Counter")

    result = run_gtd("build", cwd=repo)

    assert outside.read_bytes() == before, explain(result)
    assert "- [x]" not in outside.read_text()
    assert result.returncode == 1, explain(result)
    assert "TODO.md is a symlink" in result.stderr
    assert not (repo / "count.py").exists()  # the agent never ran on a plan gtd refused to read


def test_fifo_todo_md_fails_at_once_instead_of_hanging(repo):
    configure(repo, leak_watch(SECRET))
    commit_all(repo, "configure gtd")
    os.mkfifo(repo / "TODO.md")

    # Before the fix gtd blocked forever opening the FIFO: the timeout turns that into a failure. Since
    # issue 22 the FIFO does not reach the read: host git's sweep moves it out of the work tree first and
    # says so (workspace_files' own refusal of a FIFO is tested in tests/workspace).
    result = run_gtd(cwd=repo, timeout=60)

    assert "gtd: TODO.md is a FIFO in the work tree, moved out before host git runs" \
        in result.stderr, explain(result)
    assert not os.path.lexists(repo / "TODO.md") and "no TODO.md" in result.stderr


def test_script_named_by_a_project_config_is_a_regular_file_or_an_error(repo, tmp_path):
    # package.json's "gtd" section is a project config layer the agent may edit (non-loosening keys count
    # untrusted): a `script` naming a FIFO hung every later headless gtd on the host (and /dev/zero, not
    # tested here for the sake of the machine, exhausted its memory).
    target = tmp_path / "fifo"
    os.mkfifo(target)
    (repo / "package.json").write_text(json.dumps({"name": "x", "gtd": {"provider": "scripted", "script": str(target)}}))
    (repo / "TODO.md").write_text("# Counter\nadd numbers\n")
    commit_all(repo, "configure gtd")

    result = run_gtd("plan", "--non-interactive", cwd=repo, timeout=60)

    assert result.returncode == 2, explain(result)
    assert f"cannot read {target}: is a FIFO; gtd only reads and writes regular files" in result.stderr, explain(result)


def test_symlinked_project_config_is_refused_not_followed(repo, tmp_path):
    """.gtdrc.json -> a file outside: config errors name the file and the reason (exit 2)."""
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"provider": "scripted", "sandbox": {"enabled": False}}))
    (repo / ".gtdrc.json").symlink_to(outside)

    result = run_gtd("config", "show", "--json", cwd=repo)

    assert result.returncode == 2, explain(result)
    assert ".gtdrc.json: is a symlink; gtd never follows symlinks in the workspace" in result.stderr


def test_huge_agents_md_is_capped(repo):
    from gtd.workspace_files import MAX_READ_BYTES

    (repo / "AGENTS.md").write_text(("notes " * 1000 + "\n") * (MAX_READ_BYTES // 6000 + 1) + SECRET)
    configure(repo, leak_watch(SECRET))
    commit_all(repo, "big notes")

    result = run_gtd("plan", "Add a counter", cwd=repo)

    assert "Leaked" not in git(repo, "log", "--format=%s"), explain(result)
    assert result.returncode == 1, explain(result)
    assert f"AGENTS.md is larger than {MAX_READ_BYTES} bytes" in result.stderr


# -- escalated paths (issue 9, class 3): resolve first, then match, decide and create ---------------

def build_with_shell(repo: Path, command: str) -> None:
    build = [{"actions": [{"shell": command},
                          {"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}}]}]
    configure(repo, leak_watch(SECRET), build)
    (repo / "TODO.md").write_text(PLAN)
    commit_all(repo, "📝 plan: Counter")


@pytest.fixture
def outside(isolated_home) -> Path:
    """A directory outside the workspace that the sandbox shows read-only (in HOME, which is hidden except
    what sandbox.readPaths lists: issue 23)."""
    path = isolated_home / "outside"
    path.mkdir()
    config = isolated_home / ".config" / "gtd" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[sandbox]\nreadPaths = ["~/outside"]\n')
    return path


def test_write_through_a_symlinked_parent_is_refused_not_created_on_the_host(repo, outside):
    """The agent links `out` -> a directory outside, then writes `$PWD/out/evil.txt` (absolute, so it
    looks inside the workspace). Before the fix gtd judged it covered and created it on the host."""
    build_with_shell(repo, f"ln -s {outside} out && echo pwned > \"$PWD/out/evil.txt\"")

    result = run_gtd("build", cwd=repo)

    assert not (outside / "evil.txt").exists(), explain(result)
    assert "goes through the symlink out inside the workspace" in result.stderr, explain(result)
    assert "escalation_pending" not in result.stdout  # not grantable, so nobody is asked


def test_absolute_path_leaving_the_workspace_through_dotdot_is_refused(repo, outside):
    up = os.path.relpath(outside, repo)  # ../../home0/outside
    build_with_shell(repo, f"echo pwned > \"$PWD/{up}/evil.txt\"")

    result = run_gtd("build", cwd=repo)

    assert not (outside / "evil.txt").exists(), explain(result)
    assert "leaves the workspace through '..'" in result.stderr, explain(result)


def test_relative_path_leaving_the_workspace_is_refused_not_asked(repo, outside):
    up = os.path.relpath(outside, repo)
    build_with_shell(repo, f"echo pwned > {up}/evil.txt")

    result = run_gtd("build", cwd=repo)

    assert not (outside / "evil.txt").exists(), explain(result)
    assert "leaves the workspace through '..'" in result.stderr, explain(result)
    assert result.returncode == 0, explain(result)  # refused, not a pending request (exit 4)
