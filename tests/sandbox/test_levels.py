"""Each level's allowed actions work in a real bwrap sandbox, and its boundary holds."""

from __future__ import annotations

import pytest

from gtd.config.schema import GtdConfig, Level, Phase
from gtd.providers.base import SandboxNeeds

from sandbox_support import py, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]


def test_readonly_cannot_write_workspace_but_can_read_and_git_status(sandbox, repo):
    s = sandbox(Level.READONLY)
    r = sh(s, "cat README.md; git status --short; echo x > new.txt", repo)
    assert "hello" in r.out
    assert "Read-only file system" in r.err
    assert not (repo / "new.txt").exists()


def test_readonly_plan_phase_may_write_only_todo(sandbox, repo):
    s = sandbox(Level.READONLY, phase=Phase.PLAN)
    r = sh(s, "printf '# TODO\\n- [ ] a\\n' > TODO.md && echo ok; echo x > other.md", repo)
    assert "ok" in r.out
    assert (repo / "TODO.md").read_text() == "# TODO\n- [ ] a\n"
    assert not (repo / "other.md").exists()


ATOMIC_WRITE = (
    # What Claude Code's Write/Edit do: a sibling temp file, then a rename; in place only on EACCES.
    "import errno, os\n"
    "tmp = 'TODO.md.tmp.1'\n"
    "try:\n"
    "    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)\n"
    "except OSError as e:\n"
    "    print('temp refused:', errno.errorcode[e.errno])\n"
    "    if e.errno != errno.EACCES: raise SystemExit(1)\n"
    "    with open('TODO.md', 'w') as f: f.write('# Plan\\n')\n"
    "    print('written in place')\n"
)


def test_readonly_phase_file_survives_atomic_writers(sandbox, repo):
    (repo / "link").symlink_to("README.md")
    (repo / ".hidden").mkdir()
    s = sandbox(Level.READONLY, phase=Phase.PLAN)
    r = py(s, ATOMIC_WRITE, repo)
    assert r.out.splitlines() == ["temp refused: EACCES", "written in place"], r.out + r.err
    assert (repo / "TODO.md").read_text() == "# Plan\n"
    assert sorted(p.name for p in repo.iterdir()) == [".git", ".hidden", "README.md", "TODO.md", "link"]
    # The sealed root mirrors every entry, read-only; symlinks stay symlinks.
    r = sh(s, "ls -A | tr '\\n' ' '; echo; readlink link; cat link; echo x > README.md; mkdir .hidden/d; mv TODO.md T", repo)
    assert r.out.splitlines() == [".git .hidden README.md TODO.md link ", "README.md", "hello"], r.out + r.err
    assert r.err.count("Read-only file system") == 2 and "Permission denied" in r.err, r.err
    assert (repo / "README.md").read_text() == "hello\n" and (repo / "TODO.md").exists()
    # Whatever the agent puts in the sealed root itself lives in a tmpfs that dies with the sandbox.
    r = sh(s, "chmod u+w . && echo x > stray && cat stray", repo)
    assert r.out == "x\n", r.err
    s.close()
    assert not (repo / "stray").exists()


def test_readonly_learn_phase_may_write_agents_md(sandbox, repo):
    s = sandbox(phase=Phase.LEARN, level=None)  # learn's configured level is readonly
    assert s.policy.level is Level.READONLY
    r = sh(s, "echo learned > AGENTS.md && echo ok; echo x > TODO.md", repo)
    assert "ok" in r.out and (repo / "AGENTS.md").read_text() == "learned\n"
    assert not (repo / "TODO.md").exists()


def test_empty_phase_file_placeholder_is_removed_when_unused(sandbox, repo):
    s = sandbox(Level.READONLY, phase=Phase.PLAN)
    sh(s, "true", repo)
    s.close()
    assert not (repo / "TODO.md").exists()


def test_readwrite_writes_workspace_and_git_status_works(sandbox, repo):
    s = sandbox(Level.READWRITE)
    r = sh(s, "mkdir -p src && echo 'print(1)' > src/a.py && git status --short", repo)
    assert r.returncode == 0, r.err
    assert "src/" in r.out
    assert (repo / "src/a.py").read_text() == "print(1)\n"


def test_readwrite_cannot_write_outside_workspace(sandbox, repo, home, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    s = sandbox(Level.READWRITE)
    r = sh(s, f"echo x > {outside}/f; echo x > {home}/f; echo x > /usr/f; echo x > /etc/f", repo)
    # /tmp is private, so a sibling dir under /tmp does not even exist inside; the rest is read-only
    assert "outside/f: Directory nonexistent" in r.err, r.err
    assert r.err.count("Read-only file system") == 3, r.err
    assert not (outside / "f").exists() and not (home / "f").exists()


def test_private_tmp_is_writable_and_discarded(sandbox, repo, tmp_path):
    s = sandbox(Level.READONLY)
    (tmp_path / "host-file").write_text("host")
    r = sh(s, f"echo x > /tmp/scratch && cat /tmp/scratch; test -e {tmp_path}/host-file || echo hidden", repo)
    assert r.out.split() == ["x", "hidden"]  # the host's /tmp is not visible
    import os

    assert not os.path.exists("/tmp/scratch")


def test_needs_writable_dirs_are_writable_at_every_level(sandbox, repo, home):
    state = home / ".agent" / "sessions"
    s = sandbox(Level.READONLY, needs=SandboxNeeds(writable_dirs=[state]))
    r = sh(s, f"echo s > {state}/one && echo ok", repo)
    assert "ok" in r.out and (state / "one").read_text() == "s\n"


def test_config_writable_paths_and_inheritance(sandbox, repo, home):
    cache = home / ".cache" / "tool"
    cache.mkdir(parents=True)
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["~/.cache/tool"]}}}})
    s = sandbox(Level.NETWORK, config=cfg)  # network inherits readonly's writable path
    r = sh(s, f"echo c > {cache}/x && echo ok", repo)
    assert "ok" in r.out


def test_missing_configured_paths_become_directories_only_when_they_look_like_one(sandbox, repo, home):
    cfg = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {
        "writablePaths": ["~/.cache/pip", "~/notes.md"]}}}})
    s = sandbox(Level.READONLY, config=cfg)
    r = sh(s, f"echo c > {home}/.cache/pip/x && echo ok; echo n > {home}/notes.md", repo)
    assert "ok" in r.out and (home / ".cache/pip/x").read_text() == "c\n"
    # not guessed into a directory: it stays unwritable until an approval creates it as a file
    assert not (home / "notes.md").exists() and "Read-only file system" in r.err


def test_environment_is_minimal(sandbox, repo, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak")
    monkeypatch.setenv("GITHUB_TOKEN", "leak")
    monkeypatch.setenv("PROVIDER_KEY", "mine")
    s = sandbox(Level.READWRITE, needs=SandboxNeeds(env_passthrough=["PROVIDER_KEY"]))
    r = sh(s, "env", repo)
    assert "leak" not in r.out
    assert "PROVIDER_KEY=mine" in r.out
    assert "HTTPS_PROXY=http://gtd:" in r.out and "ALL_PROXY" not in r.out  # httpx fails on a SOCKS ALL_PROXY
    assert "NO_PROXY=localhost,.localhost,127.0.0.1,127.0.0.0/8,::1" in r.out


def test_exit_status_is_passed_through(sandbox, repo):
    s = sandbox(Level.READONLY)
    assert sh(s, "exit 42", repo).returncode == 42


def test_full_level_runs_unsandboxed_and_says_so(sandbox, repo, tmp_path):
    s = sandbox(Level.FULL)
    assert s.unsandboxed
    target = tmp_path / "outside-full"
    r = sh(s, f"echo x > {target}", repo)
    assert r.returncode == 0 and target.exists()


def test_disabled_sandbox_runs_unsandboxed(sandbox, repo):
    cfg = GtdConfig.model_validate({"sandbox": {"enabled": False}})
    s = sandbox(Level.READONLY, config=cfg)
    assert s.unsandboxed and s.policy.to_dict()["sandboxed"] is False


def test_timeout_kills_the_whole_sandbox(sandbox, repo):
    import subprocess

    s = sandbox(Level.READONLY)
    with pytest.raises(subprocess.TimeoutExpired):
        s.run(["/bin/sh", "-c", "sleep 30"], cwd=repo, timeout=0.5)
