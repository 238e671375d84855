"""Red-team regressions: attacks from inside the sandbox (readonly/readwrite) that escaped once, or that
are refused and worth pinning. Each test runs real bwrap with a temporary HOME and repository."""

from __future__ import annotations

import socket

import pytest

from gtd.config.schema import Level

from sandbox_support import py, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]


# -- kernel surface ----------------------------------------------------------------------------

def test_host_sysctls_are_read_only_even_when_gtd_runs_as_root(sandbox, repo):
    # As root, uid 0 inside the user namespace *is* global root for sysctl permission checks, and bwrap
    # leaves /proc/sys writable: kernel.core_pattern = "|cmd" would run cmd as host root on any crash.
    # Writing back the current value proves the point without changing the host.
    s = sandbox(Level.READWRITE)
    r = sh(s, "v=$(cat /proc/sys/kernel/core_pattern); printf '%s\\n' \"$v\" > /proc/sys/kernel/core_pattern"
              " && echo WROTE; grep CapEff /proc/self/status", repo)
    assert "WROTE" not in r.out, r.out + r.err
    assert "CapEff:\t0000000000000000" in r.out  # no capabilities inside, whoever runs gtd


UNIX_VIA_HIGH_BITS = (
    "import ctypes, socket\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.syscall.restype = ctypes.c_long\n"
    # socket(int domain): the kernel drops the upper 32 bits, a filter comparing all 64 does not.
    "fd = libc.syscall(41, ctypes.c_long(0x100000000 | socket.AF_UNIX), socket.SOCK_STREAM, 0)\n"
    "if fd < 0: print('refused', ctypes.get_errno())\n"
    "else:\n"
    "    s = socket.socket(fileno=fd)\n"
    "    try: s.connect('host.sock'); print('CONNECTED')\n"
    "    except OSError as e: print('OPENED-BUT', e.errno)\n"
)


def test_unix_socket_filter_cannot_be_bypassed_with_upper_argument_bits(sandbox, repo):
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("syscall number 41 is x86_64's socket()")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(repo / "host.sock"))
    srv.listen(1)
    srv.settimeout(10)
    try:
        s = sandbox(Level.READWRITE)
        r = py(s, UNIX_VIA_HIGH_BITS, repo)
        assert r.out.strip() == "refused 1", r.out + r.err
    finally:
        srv.close()


@pytest.mark.parametrize("family,name", [
    (40, "AF_VSOCK"),  # not network-namespaced: reaches the hypervisor host and other VMs
    (17, "AF_PACKET"),
    (44, "AF_XDP"),
    (38, "AF_ALG"),
    (1, "AF_UNIX"),
    (0, "AF_UNSPEC"),
    (46, "AF_MAX"),
])
def test_only_inet_and_netlink_socket_families_can_be_created(sandbox, repo, family, name):
    code = (
        "import socket\n"
        "for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW):\n"
        "    try:\n"
        f"        socket.socket({family}, kind).close(); print('CREATED'); break\n"
        "    except OSError as e: print(e.errno)\n"
        "for fam in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):\n"
        "    socket.socket(fam, socket.SOCK_DGRAM).close()\n"
        "print('inet-ok')\n"
    )
    s = sandbox(Level.READWRITE)
    r = py(s, code, repo)
    assert "CREATED" not in r.out and "inet-ok" in r.out, (name, r.out, r.err)
    assert set(r.out.split()[:-1]) == {"1"}, r.out  # EPERM from the filter, not "not supported"


# -- git metadata the host honours after the run -------------------------------------------------
# gtd commits outside the sandbox (`git add -A`, `git commit`, `git status`), and so does the user's shell
# prompt. Config can run programs (core.fsmonitor on every status/add, filter.*.clean on add), so the agent
# must not leave behind any config the host will read: neither by redirecting a known git dir, nor by
# planting a repository of its own.

def _evil_config(marker, config: str) -> str:
    """Shell: make `config` run programs on the host (`git config -f` quotes the values properly)."""
    return (f"git config -f {config} core.repositoryformatversion 0 && "
            f"git config -f {config} core.fsmonitor 'touch {marker}-fsmonitor; false' && "
            f"git config -f {config} filter.x.clean 'touch {marker}-filter; cat'")


def _host_git_runs(repo, marker) -> list[str]:
    """What the host does after a run: the user's `git status`, and gtd's own status/add/commit."""
    import subprocess

    from gtd.workflow import git as gtd_git

    subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True)
    subprocess.run(["git", "-C", str(repo / "sub"), "status"], capture_output=True)
    try:
        gtd_git.changes(repo)
        gtd_git.commit_all(repo, "after the run")
    except Exception:  # noqa: BLE001 - a refusing git is fine; only the markers matter
        pass
    return sorted(p.name for p in marker.parent.glob(marker.name + "*"))


def test_planted_commondir_cannot_redirect_the_repository_config(sandbox, repo, tmp_path):
    marker = tmp_path / "PWNED"
    s = sandbox(Level.READWRITE)
    r = sh(s, f"mkdir evil && cp -r .git/objects .git/refs .git/HEAD evil/ && {_evil_config(marker, 'evil/config')}"
              " && echo '* filter=x' > .gitattributes && echo ../evil > .git/commondir && echo planted", repo)
    assert "planted" in r.out, r.err
    s.close()
    assert _host_git_runs(repo, marker) == []
    assert not (repo / ".git/commondir").exists()
    assert any(v.target == str(repo / ".git/commondir") for v in s.violations)


@pytest.mark.parametrize("how", ["dir", "gitfile", "gitfile-into-dot-git"])
def test_repository_planted_during_the_run_is_quarantined(sandbox, repo, tmp_path, how):
    marker = tmp_path / "PWNED"
    plant = {
        "dir": "mkdir sub && git init -q sub && GD=sub/.git",
        "gitfile": "mkdir -p sub stash && git init -q --bare stash/g && echo 'gitdir: ../stash/g' > sub/.git && GD=stash/g",
        "gitfile-into-dot-git": "mkdir -p sub .git/modules && git init -q --bare .git/modules/evil"
                                " && echo 'gitdir: ../.git/modules/evil' > sub/.git && GD=.git/modules/evil",
    }[how]
    s = sandbox(Level.READWRITE)
    r = sh(s, f"{plant} && {_evil_config(marker, '$GD/config')} && git -C sub config core.bare false"
              " && git -C sub config core.worktree .. ; echo '* filter=x' > sub/.gitattributes; echo data > sub/f;"
              " git -C sub add -A && git -C sub -c user.name=a -c user.email=b commit -qm x; git add sub; echo planted", repo)
    assert "planted" in r.out, r.err
    s.close()
    assert _host_git_runs(repo, marker) == []
    assert (repo / "sub/f").read_text() == "data\n"  # the agent's files stay; only the git metadata goes
    assert any("quarantine" in v.detail for v in s.violations), s.violations


def test_planted_rebase_todo_is_quarantined(sandbox, repo, tmp_path):
    # `git rebase --continue` by the user would run every `exec` line of the todo on the host.
    s = sandbox(Level.READWRITE)
    sh(s, f"mkdir -p .git/rebase-merge && echo 'exec touch {tmp_path}/PWNED' > .git/rebase-merge/git-rebase-todo"
          " && mkdir .git/sequencer && echo x > .git/sequencer/todo", repo)
    s.close()
    assert not (repo / ".git/rebase-merge").exists() and not (repo / ".git/sequencer").exists()


def test_existing_worktree_commondir_is_read_only(sandbox, repo):
    from sandbox_support import git

    git("worktree", "add", "-q", "wt", cwd=repo)
    before = (repo / ".git/worktrees/wt/commondir").read_text()
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo ../../../evil > .git/worktrees/wt/commondir", repo)
    assert "Read-only" in r.err, r.err
    assert (repo / ".git/worktrees/wt/commondir").read_text() == before


def test_repositories_present_before_the_run_are_left_alone(sandbox, repo):
    from sandbox_support import git

    git("init", "-q", cwd=repo / "vendored" if (repo / "vendored").mkdir() is None else repo)
    s = sandbox(Level.READWRITE)
    sh(s, "echo ok > vendored/file", repo)
    s.close()
    assert (repo / "vendored/.git/config").exists() and s.violations == []
