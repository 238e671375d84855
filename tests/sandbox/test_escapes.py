"""Every escape class from the research note, tried for real inside bwrap, is refused."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.providers.base import SandboxNeeds

from sandbox_support import git, py, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]


@pytest.fixture(params=["bwrap", pytest.param("landlock", marks=pytest.mark.landlock)])
def any_backend(request, sandbox):
    """The probes whose refusal reads the same on both Linux backends run on each (the Landlock one as
    where namespaces are refused: docs/landlock-backend.md); `sandbox(level, config=..., **kw)` otherwise."""
    if request.param == "landlock":
        from gtd.sandbox.linux.landlock import abi_version

        if abi_version() < 4:
            pytest.skip("the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")

    def make(level, *, config=None, **kw):
        values = (config.model_dump(by_alias=True, exclude_unset=True) if config is not None else {})
        values.setdefault("sandbox", {})["backend"] = request.param
        session = sandbox(level, config=GtdConfig.model_validate(values), **kw)
        assert session.backend.name == request.param
        return session

    return make


# -- filesystem ------------------------------------------------------------------------------

def test_symlink_out_of_workspace_is_read_only(sandbox, repo, home):
    (home / "notes").mkdir()
    s = sandbox(Level.READWRITE)
    r = sh(s, f"ln -s {home}/notes out && echo x > out/f; ln -s {home}/.gitconfig g && echo PWNED >> g", repo)
    # ~/notes is in the hidden HOME (issue 23): not even there; ~/.gitconfig is gtd's generated read-only copy
    assert r.err.count("Read-only file system") + r.err.count("Directory nonexistent") == 2, r.err
    assert not (home / "notes/f").exists() and "PWNED" not in (home / ".gitconfig").read_text()


def test_protected_file_cannot_be_swapped_for_a_symlink(any_backend, repo):
    (repo / ".bashrc").write_text("safe\n")
    s = any_backend(Level.READWRITE)
    r = sh(s, "rm -f .bashrc; mv README.md .bashrc; ln -sf /tmp/evil .bashrc; echo evil > .bashrc", repo)
    assert r.returncode != 0
    assert (repo / ".bashrc").read_text() == "safe\n" and not (repo / ".bashrc").is_symlink()


def test_git_hooks_dir_cannot_be_replaced_by_a_symlink(any_backend, repo, tmp_path):
    s = any_backend(Level.READWRITE)
    r = sh(s, "rm -rf .git/hooks; mkdir -p evil; ln -s ../evil .git/hooks2 && mv -T .git/hooks2 .git/hooks", repo)
    assert r.returncode != 0
    assert (repo / ".git/hooks").is_dir() and not (repo / ".git/hooks").is_symlink()


@pytest.mark.parametrize("victim", [".git", ".git/hooks"])
def test_protected_dir_and_its_ancestor_cannot_be_renamed(sandbox, repo, victim):
    s = sandbox(Level.READWRITE)
    r = sh(s, f"mv {victim} moved; mkdir -p {victim}/hooks; echo 'echo pwned' > {victim}/hooks/pre-commit", repo)
    assert "Device or resource busy" in r.err or "Read-only" in r.err, r.err
    # mv may fall back to copy+delete across mounts: the copy is harmless, the original must stay
    assert (repo / ".git/hooks").is_dir() and any((repo / ".git/hooks").iterdir())
    assert not (repo / ".git/hooks/pre-commit").exists()
    git("status", cwd=repo)  # the repository is intact


def test_hard_links_to_protected_or_outside_files_are_refused(sandbox, repo, home):
    s = sandbox(Level.READWRITE)
    r = sh(s, f"ln .git/config cfg; ln {home}/.gitconfig gc", repo)
    assert r.err.count("Invalid cross-device link") == 2, r.err
    assert not (repo / "cfg").exists() and not (repo / "gc").exists()


def test_git_hooks_and_config_cannot_be_planted(any_backend, repo):
    s = any_backend(Level.READWRITE)
    r = sh(s, "echo 'echo pwned' > .git/hooks/pre-commit; git config core.hooksPath evil; echo x >> .git/config", repo)
    assert r.returncode != 0
    assert not (repo / ".git/hooks/pre-commit").exists()
    assert "evil" not in (repo / ".git/config").read_text()


def test_configured_core_hookspath_is_protected_existing_or_not(sandbox, repo):
    (repo / ".husky").mkdir()
    git("config", "core.hooksPath", "githooks", cwd=repo)
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo x > .husky/pre-commit; mkdir githooks; echo x > githooks/pre-commit; ls -la", repo)
    assert not (repo / ".husky/pre-commit").exists()
    s.close()  # a missing protected path gets no phantom mount point: if created, it is quarantined
    assert not (repo / "githooks").exists(), r.out
    assert any(v.target == str(repo / "githooks") and "quarantined" in v.detail for v in s.violations)


def test_config_include_file_is_protected(sandbox, repo):
    (repo / "shared.gitconfig").write_text("[user]\n\tname = x\n")
    git("config", "include.path", "../shared.gitconfig", cwd=repo)
    s = sandbox(Level.READWRITE)
    sh(s, "printf '[core]\\n\\thooksPath = evil\\n' >> shared.gitconfig", repo)
    assert "evil" not in (repo / "shared.gitconfig").read_text()


def test_nested_repo_hooks_and_config_are_protected(sandbox, repo):
    nested = repo / "vendor" / "deep" / "lib"
    nested.mkdir(parents=True)
    git("init", "-q", cwd=nested)
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo x > vendor/deep/lib/.git/hooks/post-checkout; echo x >> vendor/deep/lib/.git/config;"
              " mv vendor/deep/lib/.git vendor/deep/lib/g2; mv vendor vendor2; echo ok > vendor/deep/lib/file", repo)
    assert not (nested / ".git/hooks/post-checkout").exists()
    assert (nested / "file").read_text() == "ok\n"  # the nested work tree itself stays writable
    assert (nested / ".git").is_dir() and (repo / "vendor").is_dir(), r.err


def test_submodule_gitdir_and_gitmodules_are_protected(sandbox, repo, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", cwd=other)
    (other / "f").write_text("f")
    git("add", "f", cwd=other)
    git("commit", "-qm", "o", cwd=other)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "sub", cwd=repo)
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo x > .git/modules/sub/hooks/pre-commit; echo x >> .git/modules/sub/config; echo x >> .gitmodules;"
              " echo 'gitdir: /tmp/evil' > sub/.git", repo)
    assert r.err.count("Read-only file system") == 4, r.err
    assert not (repo / ".git/modules/sub/hooks/pre-commit").exists()


def test_worktree_git_file_and_gitdir_are_protected(sandbox, repo):
    git("worktree", "add", "-q", "wt", cwd=repo)
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo 'gitdir: /tmp/evil' > wt/.git; echo x > .git/worktrees/wt/config.worktree; echo ok > wt/file", repo)
    assert (repo / "wt/.git").read_text().startswith("gitdir: ") and "evil" not in (repo / "wt/.git").read_text()
    s.close()  # removes the empty read-only placeholders
    assert not (repo / ".git/worktrees/wt/config.worktree").exists()
    assert (repo / "wt/file").exists()


def test_shell_rc_and_ide_task_files_cannot_be_created(sandbox, repo, home):
    s = sandbox(Level.READWRITE)
    r = sh(s, f"echo x > .envrc; mkdir .vscode; echo x > .vscode/tasks.json; echo x >> {home}/.bashrc; echo x > .idea;"
              " echo x > .exrc; echo x > .nvim.lua", repo)
    assert "Read-only file system" in r.err  # ~/.bashrc
    s.close()
    for name in (".envrc", ".vscode", ".idea", ".exrc", ".nvim.lua"):
        assert not (repo / name).exists(), name  # created in the work tree: quarantined after the session
        assert any(v.target == str(repo / name) and "quarantined" in v.detail for v in s.violations), name
    assert not (home / ".bashrc").exists()


def test_agent_settings_cannot_be_edited_even_in_a_writable_state_dir(sandbox, repo, home):
    claude = home / ".claude"
    (claude / "projects").mkdir(parents=True)
    (claude / "settings.json").write_text("{}")
    s = sandbox(Level.READWRITE, needs=SandboxNeeds(writable_dirs=[claude]))
    r = sh(s, f"echo ok > {claude}/projects/session.jsonl; echo '{{\"hooks\":1}}' > {claude}/settings.json;"
              f" mkdir -p {claude}/hooks; mkdir -p .claude; echo x > .claude/settings.json; echo x > .mcp.json", repo)
    assert (claude / "projects/session.jsonl").read_text() == "ok\n"
    assert (claude / "settings.json").read_text() == "{}"
    s.close()  # removes the empty read-only placeholders
    assert not (claude / "hooks").exists() and not (repo / ".mcp.json").exists()


def test_gtd_config_state_and_project_config_are_protected(any_backend, repo, home):
    from gtd import paths

    cfg_dir, state_dir = paths.user_config_dir(), paths.user_state_dir()
    cfg_dir.mkdir(parents=True)
    (repo / ".gtdrc.json").write_text("{}")
    s = any_backend(Level.READWRITE, needs=SandboxNeeds(writable_dirs=[home / ".config", home / ".local"]))
    r = sh(s, f"echo x > {cfg_dir}/config.toml; mkdir -p {state_dir}/x; echo '{{\"sandbox\":{{\"enabled\":false}}}}' > .gtdrc.json", repo)
    assert not (cfg_dir / "config.toml").exists()
    assert not (state_dir / "x").exists()
    assert (repo / ".gtdrc.json").read_text() == "{}"


def test_secrets_in_home_cannot_be_read(any_backend, repo, home):
    (home / ".ssh").mkdir()
    (home / ".ssh/id_ed25519").write_text("PRIVATE KEY")
    (home / ".aws").mkdir()
    (home / ".aws/credentials").write_text("AKIA SECRET")
    (home / ".netrc").write_text("machine x password SECRET")
    s = any_backend(Level.NETWORK)
    r = sh(s, f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.netrc; ls -A {home}/.ssh", repo)
    assert "PRIVATE" not in r.out and "SECRET" not in r.out
    assert "id_ed25519" not in r.out


# -- sockets, syscalls, processes ----------------------------------------------------------

def test_host_unix_socket_and_abstract_socket_are_unreachable(any_backend, repo):
    path = repo / "host.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen(1)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind("\0gtd-test-abstract")
    abstract.listen(1)
    try:
        s = any_backend(Level.READWRITE)
        code = (
            "import socket\n"
            "for addr in ('host.sock', '\\0gtd-test-abstract'):\n"
            "    try:\n"
            "        c = socket.socket(socket.AF_UNIX); c.connect(addr); print('CONNECTED', addr)\n"
            "    except OSError as e: print('refused', e.errno)\n"
        )
        r = py(s, code, repo)
        assert "CONNECTED" not in r.out
        assert r.out.split().count("1") == 2, r.out  # EPERM from seccomp
    finally:
        srv.close()
        abstract.close()


def test_socketpair_still_works_for_child_stdio(sandbox, repo):
    s = sandbox(Level.READONLY)
    r = py(s, "import socket; a, b = socket.socketpair(); a.send(b'ok'); print(b.recv(2).decode())", repo)
    assert r.out.strip() == "ok"


@pytest.mark.parametrize("script", [
    "unshare -r true",
    "unshare -m true",
    "mount -t tmpfs none /tmp",
    "bwrap --ro-bind / / true",
])
def test_namespace_and_mount_syscalls_are_refused(any_backend, repo, script):
    s = any_backend(Level.READWRITE)
    r = sh(s, script, repo)
    assert r.returncode != 0, (script, r.out, r.err)


def test_io_uring_ptrace_keyctl_bpf_are_refused(any_backend, repo):
    code = (
        "import ctypes, errno\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "out = []\n"
        "for name, nr, args in (('io_uring_setup', 425, (1, 0)), ('ptrace', 101, (0, 0, 0, 0)),"
        " ('keyctl', 250, (0, 0)), ('bpf', 321, (0, 0, 0)), ('perf_event_open', 298, (0, 0, 0, 0, 0)),"
        " ('unshare', 272, (0x10000000,)), ('setns', 308, (0, 0))):\n"
        "    r = libc.syscall(nr, *args)\n"
        "    out.append(f'{name}={ctypes.get_errno() if r < 0 else \"OK\"}')\n"
        "print(' '.join(out))\n"
    )
    s = any_backend(Level.READWRITE)
    r = py(s, code, repo)
    results = dict(item.split("=") for item in r.out.split())
    assert results and all(v == "1" for v in results.values()), r.out  # 1 = EPERM


def test_tiocsti_is_refused(sandbox, repo):
    code = (
        "import fcntl, os, pty, termios\n"
        "m, sl = pty.openpty()\n"
        "try:\n"
        "    fcntl.ioctl(sl, termios.TIOCSTI, b'x'); print('INJECTED')\n"
        "except OSError as e: print('refused', e.errno)\n"
    )
    s = sandbox(Level.READWRITE)
    r = py(s, code, repo)
    assert r.out.strip() == "refused 1", r.out + r.err


def test_no_controlling_terminal_inside(sandbox, repo):
    s = sandbox(Level.READWRITE)
    r = sh(s, "exec 3</dev/tty && echo HAS_TTY || echo no-tty", repo)
    assert "HAS_TTY" not in r.out


def test_background_processes_do_not_outlive_the_run(any_backend, repo):
    s = any_backend(Level.READWRITE)
    r = sh(s, "setsid sleep 313 >/dev/null 2>&1 & nohup sleep 313 >/dev/null 2>&1 & echo started", repo)
    assert "started" in r.out
    deadline = time.time() + 5
    while time.time() < deadline:
        alive = [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p) == "sleep 313"]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive


def _cmdline(pid: str) -> str:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_sandbox_unavailable_is_an_error_not_a_silent_fallback(sandbox, repo, monkeypatch):
    from gtd.errors import SandboxUnavailable
    from gtd.exitcodes import ExitCode

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailable) as exc:
        sandbox(Level.READWRITE)
    assert exc.value.exit_code == ExitCode.SANDBOX_UNAVAILABLE
    assert "bubblewrap" in str(exc.value) and "gtd doctor" in str(exc.value)
