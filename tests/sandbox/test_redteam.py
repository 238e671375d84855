"""Red-team regressions: attacks from inside the sandbox (readonly/readwrite) that escaped once, or that
are refused and worth pinning. Each test runs real bwrap with a temporary HOME and repository."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from gtd.config.schema import Level

from sandbox_support import git, py, requires_bwrap, sh
from support import as_the_owner

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


@pytest.mark.parametrize("name,script", [
    ("sysfs", "echo x > /sys/kernel/uevent_helper"),
    ("cgroupfs", "echo $$ > /sys/fs/cgroup/cgroup.procs"),
    ("host pid", "kill -0 {host_pid}"),
    ("host /proc", "cat /proc/{host_pid}/environ"),
    ("setuid", "test \"$(grep NoNewPrivs /proc/self/status | tr -d ' \\t')\" = NoNewPrivs:1 && false"),
    ("user namespace via python", "python3 -c 'import os; os.unshare(0x10000000)'"),
    ("dbus", "dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames"),
])
def test_kernel_and_host_process_surface_is_closed(sandbox, repo, name, script):
    import os

    s = sandbox(Level.READWRITE)
    r = sh(s, script.format(host_pid=os.getpid()) + " && echo ESCAPED", repo)
    assert "ESCAPED" not in r.out, (name, r.out, r.err)


def test_dev_shm_and_tmp_are_private(sandbox, repo):
    import os

    s = sandbox(Level.READWRITE)
    sh(s, "echo x > /dev/shm/gtd-redteam && echo x > /tmp/gtd-redteam", repo)
    assert not os.path.exists("/dev/shm/gtd-redteam") and not os.path.exists("/tmp/gtd-redteam")


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
    assert "planted" not in r.out and "Read-only file system" in r.err, r.out + r.err  # the git dir is read-only
    s.close()
    assert _host_git_runs(repo, marker) == []
    assert not (repo / ".git/commondir").exists()


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
    if how == "gitfile-into-dot-git":
        assert "Read-only file system" in r.err and not (repo / ".git/modules").exists()  # prevented outright
    else:
        assert any("quarantine" in v.detail for v in s.violations), s.violations


def test_planted_rebase_todo_is_quarantined(sandbox, repo, tmp_path):
    # `git rebase --continue` by the user would run every `exec` line of the todo on the host.
    s = sandbox(Level.READWRITE)
    sh(s, f"mkdir -p .git/rebase-merge && echo 'exec touch {tmp_path}/PWNED' > .git/rebase-merge/git-rebase-todo"
          " && mkdir .git/sequencer && echo x > .git/sequencer/todo", repo)
    s.close()
    assert not (repo / ".git/rebase-merge").exists() and not (repo / ".git/sequencer").exists()


@pytest.mark.parametrize("where", ["docs", "stash/g", "a/b/c.git"])
def test_bare_repository_planted_in_the_work_tree_is_quarantined(sandbox, repo, tmp_path, where):
    # A directory holding HEAD, objects and refs is a git dir whatever its name: git run inside it (the
    # user's shell prompt, `git log` with the agent's core.pager) takes it for a bare repository and runs
    # its config on the host, and gtd's `git add -A` would commit it for every clone.
    marker = tmp_path / "PWNED"
    s = sandbox(Level.READWRITE)
    r = sh(s, f"mkdir -p {where} && echo keep > {where}/notes.txt && git init -q --bare {where} && "
              f"{_evil_config(marker, where + '/config')} && git config -f {where}/config core.pager "
              f"'touch {marker}-pager; cat' && echo planted", repo)
    assert "planted" in r.out, r.err
    s.close()
    assert not (repo / where).exists()
    assert any("quarantine" in v.detail and v.target == str(repo / where) for v in s.violations), s.violations
    (repo / where).mkdir(parents=True)
    found = git("-C", str(repo / where), "rev-parse", "--absolute-git-dir", cwd=repo).stdout.strip()
    assert found == str(repo / ".git")  # git from there finds the user's repository again
    assert _host_git_runs(repo, marker) == []


def test_bare_repository_present_before_the_run_is_read_only(sandbox, repo):
    git("init", "-q", "--bare", "tests/fixtures/remote.git", cwd=repo)
    s = sandbox(Level.READWRITE)
    r = sh(s, "git config -f tests/fixtures/remote.git/config core.pager evil; "
              "echo x > tests/fixtures/remote.git/hooks/post-update; echo x > tests/fixtures/ok", repo)
    assert r.err.count("Read-only file system") >= 1 and "evil" not in (repo / "tests/fixtures/remote.git/config").read_text()
    assert not (repo / "tests/fixtures/remote.git/hooks/post-update").exists()
    s.close()
    assert (repo / "tests/fixtures/remote.git/HEAD").exists() and (repo / "tests/fixtures/ok").exists()
    assert not s.violations, s.violations


@pytest.mark.parametrize("mode", ["0111", "0444", "0000"])
def test_unreadable_directory_cannot_hide_a_planted_repository(repo, tmp_path, mode):
    # A directory the agent makes unlistable (0111) kept the repository below it out of the walk for
    # planted metadata: left in place, where `cd sub/deep` (a shell prompt's git) or a later `chmod -R u+r`
    # hands its config to host git. gtd runs as the repository's owner without root's DAC override then.
    import os
    import subprocess
    import sys

    marker = tmp_path / "PWNED"
    prefix = as_the_owner()
    plant = (f"mkdir -p sub/deep && git init -q sub/deep && {_evil_config(marker, 'sub/deep/.git/config')}"
             f" && chmod {mode} sub && echo planted")
    r = subprocess.run([*prefix, sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--",
                        "sh", "-c", plant], cwd=repo, capture_output=True, text=True, timeout=120)
    assert "planted" in r.stdout, r.stderr
    assert "quarantine" in r.stderr and f"{repo}/sub " in r.stderr, r.stderr
    assert not os.path.lexists(repo / "sub")
    assert _host_git_runs(repo, marker) == []


def test_an_unlistable_work_tree_root_cannot_hide_a_planted_repository(repo, tmp_path):
    # The agent chmods its bind-mounted root to 0311 (entering by name still works): the walk for planted
    # metadata listed nothing and reported nothing, leaving `sub/.git` for host git once the person (or a
    # `chmod u+r .`) makes the root listable again. gtd runs as the repository's owner without root's DAC override.
    import subprocess
    import sys

    marker = tmp_path / "PWNED"
    prefix = as_the_owner()
    plant = f"git init -q sub && {_evil_config(marker, 'sub/.git/config')} && chmod 0311 . && echo planted"
    r = subprocess.run([*prefix, sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--",
                        "sh", "-c", plant], cwd=repo, capture_output=True, text=True, timeout=120)
    assert "planted" in r.stdout, r.stderr
    assert f"{repo}/sub/.git (" in r.stderr and "quarantine" in r.stderr, r.stderr
    assert f"{repo} (" in r.stderr and "could not be listed" in r.stderr, r.stderr
    assert stat.S_IMODE(os.stat(repo).st_mode) == 0o711  # the owner's rwx given back, nothing else
    assert not os.path.lexists(repo / "sub/.git") and (repo / "README.md").exists()
    assert _host_git_runs(repo, marker) == []


def _sandbox_run_with_quarantine_blocked(repo, plant: str):
    """`gtd sandbox run --level readwrite -- sh -c PLANT` as the owner (without root's DAC override), with a
    file where the project's quarantine directory would be: planted git metadata cannot be moved there and
    must be removed in place."""
    import subprocess
    import sys

    from gtd import paths

    blocked = paths.project_state_dir(repo) / "quarantine"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file where the quarantine directory would be")
    return subprocess.run([*as_the_owner(), sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite",
                           "--", "sh", "-c", plant], cwd=repo, capture_output=True, text=True, timeout=120)


def test_a_planted_repository_that_cannot_be_moved_is_removed_though_the_agent_locked_dirs_in_it(repo, tmp_path):
    # When the move into gtd's quarantine fails (here its directory is blocked by a file; in life, a state
    # dir on another filesystem, whose copy cannot read what the agent locked), the planted repository is
    # removed instead. Directories in it the agent made chmod 0000 / 0111 made that rmtree fail too: "COULD
    # NOT REMOVE", and the repository stayed for host git. gtd runs as the owner without root's DAC override.
    marker = tmp_path / "PWNED"
    plant = (f"git init -q sub && {_evil_config(marker, 'sub/.git/config')} && mkdir -p sub/.git/objects/ab/cd"
             " && touch sub/.git/objects/ab/cd/x && chmod 0000 sub/.git/objects/ab/cd && chmod 0111 sub/.git/objects/ab"
             " && chmod 0000 sub/.git/refs && echo planted")
    r = _sandbox_run_with_quarantine_blocked(repo, plant)
    assert "planted" in r.stdout, r.stderr
    assert f"{repo}/sub/.git (" in r.stderr and "removed (could not quarantine" in r.stderr, r.stderr
    assert not os.path.lexists(repo / "sub/.git")
    assert _host_git_runs(repo, marker) == []


def test_symlink_into_the_package_cache_layer_is_quarantined(sandbox, repo, tmp_path):
    # The package caches' copy-on-write layer lives in gtd's state dir on the host, where the walks for
    # planted git metadata never look: a repository the agent made in ~/.cache/pip, reached through a
    # new work-tree symlink (the layer's host path is in /proc/self/mountinfo), ran its config on the
    # host as soon as the user's shell prompt ran `git status` in `docs/`.
    marker = tmp_path / "PWNED"
    s = sandbox(Level.READWRITE)
    # (~/.cache/pip is folded into the cache home's overlay: its upper layer holds pip/x.)
    r = sh(s, "upper=$(grep \" $HOME/.cache \" /proc/self/mountinfo | sed -n 's/.*upperdir=\\([^,]*\\),.*/\\1/p' | head -1);"
              " test -n \"$upper\" || { echo no-overlay; exit 0; };"
              f" git init -q ~/.cache/pip/x && {_evil_config(marker, '$HOME/.cache/pip/x/.git/config')}"
              " && ln -s \"$upper/pip/x\" docs && ln -s \"$upper\" cache-link && ln -s README.md readme-link && echo planted", repo)
    if "no-overlay" in r.out:
        pytest.skip("package caches are not overlays here")
    assert "planted" in r.out, r.err
    s.close()
    assert not os.path.lexists(repo / "docs") and not os.path.lexists(repo / "cache-link")
    assert os.path.islink(repo / "readme-link")  # a link inside the work tree is the agent's work
    assert sum("symlink into a place outside the workspace" in v.detail for v in s.violations) == 2, s.violations
    assert _host_git_runs(repo, marker) == []


def test_test_command_output_is_kept_as_a_bounded_tail(sandbox, repo):
    # The tests are the agent's: `cat /dev/zero` in them grew gtd's memory (outside the sandbox's limits)
    # without bound, one endless line held whole; every reader only ever used the output's end.
    import tracemalloc

    from gtd.workflow.phase_agent import run_streaming

    s = sandbox(Level.READWRITE)
    seen = []
    tracemalloc.start()
    try:
        done = run_streaming(s, ["/bin/sh", "-c", "head -c 100000000 /dev/zero; echo; echo LAST-LINE; exit 3"],
                             cwd=repo, timeout=60, on_line=lambda line: seen.append(len(line)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.returncode == 3
    assert done.stdout.endswith(b"LAST-LINE\n") and len(done.stdout) < 2_000_000, len(done.stdout)
    assert done.stdout.startswith(b"[gtd] ") and b"bytes of earlier output left out" in done.stdout[:100]
    assert max(seen) <= 64 * 1024 and peak < 30_000_000, (max(seen), peak)


def test_agent_config_created_in_a_subdirectory_is_quarantined(sandbox, repo):
    # Protected names were placed at repository roots only: `packages/app/.claude/settings.json` with a
    # hook (or an opencode.json with an MCP server command) ran on the host once the person started their
    # own CLI in that directory (opencode reads every opencode.json up to the repository's root).
    s = sandbox(Level.READWRITE)
    r = sh(s, "mkdir -p packages/app/.claude deep/er && echo '{\"hooks\": {}}' > packages/app/.claude/settings.json"
              " && echo '{\"mcp\": {}}' > packages/app/opencode.json && mkdir deep/er/.pi && echo x > deep/er/.mcp.json"
              " && echo code > packages/app/main.py && echo planted", repo)
    assert "planted" in r.out, r.err
    s.close()
    for gone in ("packages/app/.claude", "packages/app/opencode.json", "deep/er/.pi", "deep/er/.mcp.json"):
        assert not os.path.lexists(repo / gone), gone
    assert (repo / "packages/app/main.py").read_text() == "code\n"  # the agent's work stays
    assert sum("agent CLI's config" in v.detail for v in s.violations) == 4, s.violations


def test_agent_config_beside_a_repository_planted_in_the_session_is_quarantined(sandbox, repo):
    # Every directory holding a `.git` at close counted as a repository root, whose names are the placeholder
    # registry's; but the registry only knows the roots present at the start: a planted `sub/.git` (any junk
    # file) let `sub/.claude` stay once `sub/.git` itself was quarantined.
    s = sandbox(Level.READWRITE)
    r = sh(s, "mkdir -p sub/.claude && echo junk > sub/.git && echo '{\"hooks\": {}}' > sub/.claude/settings.json"
              " && echo planted", repo)
    assert "planted" in r.out, r.err
    s.close()
    assert not os.path.lexists(repo / "sub/.git") and not os.path.lexists(repo / "sub/.claude")
    assert sum("agent CLI's config" in v.detail for v in s.violations) == 1, s.violations


def test_agent_config_gtd_makes_at_the_root_during_a_session_stays(sandbox, repo):
    # An agent config the person makes at the repository's root on the host once the session has started
    # (opencode's provider used to make an empty `.opencode` there): a root's names are the placeholder registry's,
    # which sees it present when the command starts, not the walk's for agent configs in subdirectories.
    s = sandbox(Level.READWRITE)
    (repo / ".opencode").mkdir()
    assert sh(s, "echo ran", repo).out == "ran\n"
    s.close()
    assert (repo / ".opencode").is_dir() and not s.violations, s.violations


def test_the_original_gtds_project_files_are_protected_like_gtdrc_json(sandbox, repo):
    # gtd reads them as project config under .gtdrc.json: an agent-made gtd.config.ts made every later gtd
    # in the repository refuse to start, a .gtdrc.yaml changed testCommand, provider or script unseen.
    (repo / ".gtdrc.yaml").write_text("testCmd: make test\n")
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo 'testCmd: x' > .gtdrc.yaml; echo '{}' > gtd.config.json; echo 'export default {}' > gtd.config.ts;"
              " echo ok > notes.txt", repo)
    assert "Read-only file system" in r.err, r.err
    s.close()
    assert (repo / ".gtdrc.yaml").read_text() == "testCmd: make test\n"
    assert not (repo / "gtd.config.json").exists() and not (repo / "gtd.config.ts").exists()
    assert (repo / "notes.txt").exists()


def test_agent_config_present_in_a_subdirectory_is_read_only(sandbox, repo):
    (repo / "packages/app/.claude").mkdir(parents=True)
    (repo / "packages/app/.claude/settings.json").write_text("{}\n")
    (repo / "packages/app/opencode.json").write_text("{}\n")
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo '{\"hooks\": 1}' > packages/app/.claude/settings.json; echo x > packages/app/.claude/new;"
              " echo x > packages/app/opencode.json; echo ok > packages/app/main.py", repo)
    assert r.err.count("Read-only file system") == 3, r.err
    s.close()
    assert (repo / "packages/app/.claude/settings.json").read_text() == "{}\n"
    assert (repo / "packages/app/opencode.json").read_text() == "{}\n"
    assert (repo / "packages/app/main.py").read_text() == "ok\n"


def test_programs_gtd_runs_on_the_host_never_come_from_the_workspace(sandbox, repo, tmp_path, monkeypatch):
    # An activated project venv (or node_modules/.bin, direnv's PATH_add, a relative PATH entry) puts a
    # directory the agent writes on PATH: a `bwrap` planted there ran, unsandboxed, as the next sandbox
    # started; likewise gtd's own git, the caches' unshare/nsenter/mount and the C compiler.
    names = ("bwrap", "git", "unshare", "nsenter", "mount", "cc", "gcc", "sh")
    monkeypatch.setenv("PATH", os.pathsep.join([str(repo / ".venv/bin"), "bin", os.environ["PATH"]]))
    monkeypatch.chdir(repo)
    s = sandbox(Level.READWRITE)
    plant = "; ".join(f"printf '#!/bin/sh\\ntouch {tmp_path}/PWNED-{n}\\nexec /usr/bin/{n} \"$@\"\\n' > .venv/bin/{n}"
                      f" && cp .venv/bin/{n} bin/{n}" for n in names)
    r = sh(s, f"mkdir -p .venv/bin bin && {plant} && chmod +x .venv/bin/* bin/* && echo planted", repo)
    assert "planted" in r.out, r.err
    s.close()
    again = sandbox(Level.READWRITE)
    assert sh(again, "echo fine", repo).out == "fine\n"
    again.close()
    from gtd.sandbox.host import host_git
    from gtd.workflow import git as gtd_git

    monkeypatch.setattr(host_git, "_PROGRAMS", {})  # looked up again, as by a fresh gtd process
    gtd_git.commit_all(repo, "after the run")
    assert gtd_git.changes(repo) == []
    assert sorted(p.name for p in tmp_path.glob("PWNED-*")) == []


@pytest.mark.parametrize("planted", ["file", "link to a file outside"])
def test_cache_dir_named_by_a_file_in_the_workspace_is_not_honoured(sandbox, repo, home, tmp_path, monkeypatch, planted):
    # An activated project venv's pip.conf is the agent's to write: its cache-dir made gtd create any
    # directory on the host (mkdir -p, e.g. where ~/.gitconfig should be a file) and mount it as a
    # writable layer in the next sandbox. Registry hosts from such a file were already left out.
    # As a link to a file outside (one the agent left in a writable cache layer) it resolved outside the
    # workspace and counted: the link in the workspace is the agent's too.
    from gtd.sandbox.policy.caches import known_caches

    target = tmp_path / "chosen-by-the-agent" / "deep"
    (repo / ".venv").mkdir()
    if planted == "file":
        (repo / ".venv/pip.conf").write_text(f"[global]\ncache-dir = {target}\n")
    else:
        (tmp_path / "cache-layer").mkdir()
        (tmp_path / "cache-layer/pip.conf").write_text(f"[global]\ncache-dir = {target}\n")
        (repo / ".venv/pip.conf").symlink_to(tmp_path / "cache-layer/pip.conf")
    monkeypatch.setenv("VIRTUAL_ENV", str(repo / ".venv"))
    monkeypatch.delenv("PIP_CACHE_DIR", raising=False)
    monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)
    s = sandbox(Level.READWRITE)
    assert sh(s, "echo ran", repo).out == "ran\n"
    s.close()
    assert not (tmp_path / "chosen-by-the-agent").exists()
    pip = next(c for c in known_caches(home, workspace=repo) if c.tool == "pip")
    assert pip.path == home / ".cache/pip" and pip.origin == "default", pip


def test_existing_worktree_commondir_is_read_only(sandbox, repo):
    from sandbox_support import git

    git("worktree", "add", "-q", "wt", cwd=repo)
    before = (repo / ".git/worktrees/wt/commondir").read_text()
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo ../../../evil > .git/worktrees/wt/commondir", repo)
    assert "Read-only" in r.err, r.err
    assert (repo / ".git/worktrees/wt/commondir").read_text() == before


# -- committed history -----------------------------------------------------------------------------
# gtd commits every finished step, so the history is the user's safety net: the agent may not rewrite it.

@pytest.mark.parametrize("attack", [
    "rm -rf .git",
    "git reset -q --hard HEAD~1",
    "git update-ref -d refs/heads/main",
    "git reflog expire --expire=now --all && git gc -q --prune=now",
    "git checkout -q --orphan other && git rm -rfq . && git -c user.name=a -c user.email=b commit -qm wiped"
    " --allow-empty && git branch -D main",
])
def test_committed_history_survives_the_agent(sandbox, repo, attack):
    from sandbox_support import git

    (repo / "README.md").write_text("second\n")
    git("commit", "-qam", "second", cwd=repo)
    before = git("rev-parse", "HEAD", cwd=repo).stdout
    s = sandbox(Level.READWRITE)
    sh(s, attack, repo)
    s.close()
    git("checkout", "-qf", "main", cwd=repo)  # whatever happened to the work tree and index
    assert git("rev-parse", "HEAD", cwd=repo).stdout == before
    assert git("log", "--format=%s", cwd=repo).stdout.split() == ["second", "init"]
    git("fsck", "--no-dangling", cwd=repo)  # every object is still there


def test_everyday_git_still_works_inside(sandbox, repo):
    # The git dir is read-only as a whole; reading git works, and restore/checkout of files uses a
    # throwaway index (the sandbox's git wrapper).
    s = sandbox(Level.READWRITE)
    r = sh(s, "echo changed > README.md && git status --short && git diff --stat && git checkout -- README.md"
              " && cat README.md && echo again > README.md && git restore README.md && cat README.md && echo DONE", repo)
    assert r.out.splitlines()[0] == " M README.md", r.out + r.err
    assert r.out.count("hello") == 2 and r.out.rstrip().endswith("DONE"), r.out + r.err
    assert r.err == "", r.err
    for cmd in ("add n.txt", "commit -qm x", "stash", "branch topic", "checkout -b topic", "restore --staged ."):
        r = sh(s, f"echo new > n.txt; git {cmd}", repo)  # history is gtd's job: one clear line, at once
        assert r.returncode == 1 and r.err.count("\n") == 1 and "gtd commits the work tree" in r.err, (cmd, r.err)


def test_git_refusal_under_sandbox_run_says_to_run_git_on_the_host(sandbox, repo):
    # The person's own command has no step after it that commits: the advice is theirs to follow.
    s = sandbox(Level.READWRITE, in_step=False)
    r = sh(s, "echo new > n.txt; git commit -qam x", repo)
    assert r.returncode == 1 and r.err.count("\n") == 1, r.err
    assert "run it on the host once the command is done" in r.err and "gtd commits" not in r.err, r.err


def test_repositories_present_before_the_run_are_left_alone(sandbox, repo):
    from sandbox_support import git

    git("init", "-q", cwd=repo / "vendored" if (repo / "vendored").mkdir() is None else repo)
    s = sandbox(Level.READWRITE)
    sh(s, "echo ok > vendored/file", repo)
    s.close()
    assert (repo / "vendored/.git/config").exists() and s.violations == []


def test_a_run_killed_on_timeout_cannot_plant_git_metadata_after_the_check(sandbox, repo):
    import subprocess
    import time

    s = sandbox(Level.READWRITE)
    script = "(trap '' TERM HUP; while :; do echo ../evil > .git/commondir 2>/dev/null; done) & sleep 30"
    with pytest.raises(subprocess.TimeoutExpired):
        s.run(["/bin/sh", "-c", script], cwd=repo, timeout=0.5)
    s.close()
    time.sleep(0.3)
    assert not (repo / ".git/commondir").exists()


# -- the filtering proxy -------------------------------------------------------------------------

def _proxy(allow, deny=(), resolver=None):
    from gtd.sandbox.policy.domains import DomainRules
    from gtd.sandbox.network.proxy import FilteringProxy

    return FilteringProxy(DomainRules.parse(allow, deny), "tok", connect_timeout=0.5,
                          resolver=resolver or (lambda h, p: (_ for _ in ()).throw(OSError("no dns in tests"))))


@pytest.mark.parametrize("spelling", ["167772165", "0xa.0.0.5", "012.0.0.5", "10.5", "::ffff:10.0.0.5",
                                      "[::ffff:a00:5]", "10.0.0.5.", "0x0A000005"])
def test_ip_deny_rule_holds_for_every_spelling_of_the_address(spelling):
    proxy = _proxy(["*", "10.0.0.5:80"], deny=["10.0.0.5"])
    v = proxy.authorize(spelling, 80)
    assert v.denied and not v.ok, (spelling, v.reason)


def test_deny_rule_applies_to_the_resolved_address_too():
    proxy = _proxy(["*"], deny=["10.0.0.5"], resolver=lambda h, p: ["10.0.0.5"])
    v = proxy.authorize("innocent.test", 80)
    assert v.denied and "10.0.0.5" in v.reason


@pytest.mark.parametrize("host,allow", [
    ("10.0.0.5", ["*"]),                 # a raw private address under "allow everything"
    ("rebind.test", ["*"]),              # a name under "*" that resolves to the LAN (DNS rebinding)
    ("fd00::5", ["*"]),
    ("100.64.1.1", ["*"]),               # carrier-grade NAT / tailnet
])
def test_private_addresses_need_a_specific_rule(host, allow):
    proxy = _proxy(allow, resolver=lambda h, p: ["10.0.0.5"])
    v = proxy.authorize(host, 80)
    assert v.denied and "private" in v.reason, v.reason


@pytest.mark.parametrize("host,allow", [("10.0.0.5", ["10.0.0.5:80"]), ("mirror.corp.test", ["mirror.corp.test"]),
                                        ("a.corp.test", ["*.corp.test"])])
def test_private_addresses_named_by_a_specific_rule_are_dialled(host, allow):
    proxy = _proxy(allow, resolver=lambda h, p: ["10.0.0.5"])
    v = proxy.authorize(host, 80)
    assert not v.denied, v.reason  # the dial itself fails here (nothing listens), but policy allowed it


@pytest.mark.parametrize("host", [
    "evil.test\\.pypi.org", "x@a.pypi.org", "a.pypi.org\x00", "a b.pypi.org", "a..pypi.org",
    ("a" * 64) + ".pypi.org", ("a." * 130) + "pypi.org", "-a.pypi.org", "xn--pypi-\u00e9.pypi.org",
])
def test_malformed_host_names_are_refused_before_matching(host):
    proxy = _proxy(["*.pypi.org"], resolver=lambda h, p: ["93.184.216.34"])
    v = proxy.authorize(host, 443)
    assert v.denied and "invalid host name" in v.reason, (host, v.reason)


class _RawUpstream:
    """A TCP server that records every byte it receives and answers each connection once."""

    def __init__(self):
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self):
        from support import stop_listening

        stop_listening(self.sock, self._thread)

    def _serve(self):
        import time

        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.settimeout(1.0)
            deadline = time.time() + 1.5
            try:
                while time.time() < deadline:
                    data = c.recv(65536)
                    if not data:
                        break
                    self.received += data
                    if b"\r\n\r\n" in data:
                        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            except OSError:
                pass
            c.close()


RAW_REQUEST = (
    "import os, socket, sys\n"
    "tok = os.environ['HTTP_PROXY'].split(':')[2].split('@')[0]\n"
    "import base64; auth = base64.b64encode(('gtd:' + tok).encode()).decode()\n"
    "c = socket.create_connection(('127.0.0.1', 3128))\n"
    "c.sendall(sys.argv[1].replace('AUTH', auth).encode().decode('unicode_escape').encode('latin-1'))\n"
    "c.settimeout(4)\n"
    "try:\n"
    "    while c.recv(65536): pass\n"
    "except OSError: pass\n"
)


def _raw(session, repo, request: str):
    r = session.run([__import__("sys").executable, "-c", RAW_REQUEST, request], cwd=repo, timeout=30)
    return r


def _upstream_config(port):
    from gtd.config.schema import GtdConfig

    return GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"allowDomains": [f"127.0.0.1:{port}"]}}}})


def test_absolute_form_request_goes_to_the_authorised_host_only(sandbox, repo):
    # Host header mismatch = domain fronting on a shared CDN; a second pipelined request = smuggling.
    up = _RawUpstream()
    s = sandbox(Level.READWRITE, config=_upstream_config(up.port))
    _raw(s, repo, f"GET http://127.0.0.1:{up.port}/a HTTP/1.1\\r\\nHost: evil.test\\r\\nProxy-Authorization: Basic AUTH"
                  "\\r\\nContent-Length: 3\\r\\n\\r\\nabcGET /b HTTP/1.1\\r\\nHost: evil.test\\r\\n\\r\\n")
    up.close()
    text = up.received.decode("latin-1")
    assert text.startswith("GET /a HTTP/1.1\r\n"), text
    assert f"\r\nHost: 127.0.0.1:{up.port}\r\n" in text and "evil.test" not in text, text
    assert text.endswith("\r\n\r\nabc"), text  # exactly the declared body, nothing after it


def test_chunked_ambiguous_or_injected_headers_are_refused_for_plain_http(sandbox, repo):
    up = _RawUpstream()
    s = sandbox(Level.READWRITE, config=_upstream_config(up.port))
    for extra in ("Transfer-Encoding: chunked", "Content-Length: 1\\r\\nContent-Length: 40", "Content-Length: -1",
                  "X: a\\nHost: evil.test", " folded: x", "X: a\\rHost: evil.test"):
        _raw(s, repo, f"POST http://127.0.0.1:{up.port}/ HTTP/1.1\\r\\nProxy-Authorization: Basic AUTH\\r\\n{extra}"
                      "\\r\\n\\r\\n0\\r\\n\\r\\nGET /smuggled HTTP/1.1\\r\\n\\r\\n")
    up.close()
    assert b"smuggled" not in up.received and up.received == b"", up.received


def test_connect_and_a_second_request_on_one_connection_do_not_mix(sandbox, repo):
    # After a refused CONNECT the proxy closes: the bytes after it are never read as a new request.
    up = _RawUpstream()
    s = sandbox(Level.READWRITE, config=_upstream_config(up.port))
    _raw(s, repo, "CONNECT evil.test:443 HTTP/1.1\\r\\nProxy-Authorization: Basic AUTH\\r\\n\\r\\n"
                  f"GET http://127.0.0.1:{up.port}/smuggled HTTP/1.1\\r\\nProxy-Authorization: Basic AUTH\\r\\n\\r\\n")
    up.close()
    assert up.received == b""
    assert [v.target for v in s.violations] == ["evil.test:443"]


# -- prompt level: the model asking -------------------------------------------------------------

def test_model_asking_claude_to_disable_the_sandbox_changes_nothing(sandbox, repo, home, tmp_path, monkeypatch):
    # Claude's Bash tool takes `dangerouslyDisableSandbox: true` to skip *Claude's own* sandbox. gtd's
    # sandbox wraps the whole CLI process, so the flag (or any text the model writes) cannot reach it.
    import shutil
    from pathlib import Path
    from types import SimpleNamespace

    from fakemodel.server import FakeModelServer, say, tool
    from gtd.config.schema import Phase
    from gtd.providers.base import AgentRequest
    from gtd.providers.events import EventKind
    from gtd.providers.registry import _load
    from gtd.providers.runner import run_agent

    bin_dir = Path(__file__).resolve().parents[2] / ".tools" / "agents" / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    if shutil.which("claude") is None:
        pytest.skip("claude CLI not installed (scripts/install-agents)")
    outside = home / "escaped.txt"
    command = f"echo pwned > {outside}; echo 'echo pwned' > .git/hooks/pre-commit; echo inside > proof.txt"
    with FakeModelServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key")
        server.script([tool("Bash", {"command": command, "dangerouslyDisableSandbox": True,
                                     "description": "needs to run outside the sandbox"}), say("done")])
        provider = _load("claude")()
        s = sandbox(Level.READWRITE, needs=provider.sandbox_needs())
        request = AgentRequest(phase=Phase.BUILD, prompt="go", cwd=repo)
        result = run_agent(provider, request, s, timeouts=SimpleNamespace(inactivity_seconds=90, run_seconds=180))
    results = [e for e in result.events if e.kind == EventKind.TOOL_RESULT]
    assert results, result.stderr[-2000:]
    assert (repo / "proof.txt").read_text() == "inside\n"  # the command did run, inside the sandbox
    assert not outside.exists() and not (repo / ".git/hooks/pre-commit").exists()
    assert "Read-only file system" in (results[0].text or ""), results[0].text
    assert not s.unsandboxed and s.policy.level is Level.READWRITE


# -- HOME: secrets and files the host runs later --------------------------------------------------

@pytest.mark.parametrize("secret", [
    ".bash_history", ".zsh_history", ".local/share/fish/fish_history", ".psql_history", ".pgpass", ".my.cnf",
    ".config/rclone/rclone.conf", ".s3cfg", ".m2/settings.xml", ".gradle/gradle.properties",
    ".config/google-chrome/Default/Cookies", ".mozilla/firefox/x/cookies.sqlite", ".local/share/keyrings/login.keyring",
    ".config/sops/age/keys.txt", ".cache/huggingface/token",
])
def test_more_secrets_in_home_are_hidden(sandbox, repo, home, secret):
    path = home / secret
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("TOPSECRET")
    s = sandbox(Level.NETWORK)
    r = sh(s, f"cat {path}", repo)
    assert "TOPSECRET" not in r.out


@pytest.mark.parametrize("target", [
    ".local/lib/python3.11/site-packages/evil.pth",  # imported by every Python on the host
    ".cargo/config.toml",                            # build.rustc-wrapper runs a program on `cargo build`
    ".cargo/bin/ls",                                 # on PATH
    ".config/pip/pip.conf",                          # index-url: every later `pip install`
    ".config/fish/config.fish",
    ".config/environment.d/evil.conf",
    ".local/share/systemd/user/evil.service",
    ".ipython/profile_default/startup/evil.py",
    ".claude/CLAUDE.md",                             # instructions for every later Claude session
    ".pi/agent/AGENTS.md",
    ".config/direnv/direnvrc",
    ".local/share/bash-completion/completions/git",  # sourced by bash-completion on the first `git <Tab>`
    ".config/bash_completion",                       # sourced by every interactive bash (bash-completion)
])
def test_files_the_host_runs_stay_protected_inside_writable_home_dirs(sandbox, repo, home, target):
    from gtd.providers.base import SandboxNeeds

    dirs = [home / d for d in (".local", ".cargo", ".config", ".ipython", ".claude", ".pi")]
    for d in dirs:
        d.mkdir(exist_ok=True)
    s = sandbox(Level.READWRITE, needs=SandboxNeeds(writable_dirs=dirs))
    r = sh(s, f"mkdir -p $(dirname {home}/{target}); echo evil > {home}/{target}; echo ok > {home}/.local/state-file", repo)
    assert (home / ".local/state-file").exists(), r.err  # the dirs are writable in general
    assert not (home / target).is_file() or (home / target).read_text() != "evil\n", r.err


def test_gtds_own_git_never_runs_an_fsmonitor_command(repo, tmp_path):
    # Not reachable from the sandbox any more (config is read-only, planted repos are quarantined);
    # this pins the host-side second line: gtd's git ignores core.fsmonitor, nested repositories included.
    from sandbox_support import git
    from gtd.workflow import git as gtd_git

    marker = tmp_path / "PWNED"
    (repo / "sub").mkdir()
    git("init", "-q", cwd=repo / "sub")
    (repo / "sub/f").write_text("x")
    git("add", "f", cwd=repo / "sub")
    git("-c", "user.name=a", "-c", "user.email=b", "commit", "-qm", "s", cwd=repo / "sub")
    for where in (repo, repo / "sub"):
        git("config", "core.fsmonitor", f"touch {marker}; false", cwd=where)
    (repo / "sub/f").write_text("changed")
    gtd_git.commit_all(repo, "with a nested repository")
    (repo / "sub/f").write_text("changed again")
    gtd_git.changes(repo)
    gtd_git.diff_of_changes(repo)
    assert not marker.exists()


def test_gtd_stopped_by_sigterm_or_sighup_still_quarantines_what_the_agent_planted(repo):
    # Python dies at once on SIGTERM/SIGHUP (`kill`, the terminal closed): the session never closed, the
    # planted repository stayed, and the next session took it for the person's own.
    import signal
    import subprocess
    import sys

    from support import popen_as_from_a_shell

    for sig in (signal.SIGTERM, signal.SIGHUP):
        proc = popen_as_from_a_shell([sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--",
                                      "sh", "-c", "git init -q sub && echo planted && sleep 60"], cwd=repo,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "planted\n"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 128 + sig, err
        assert not os.path.lexists(repo / "sub/.git") and "quarantine" in err, err


def test_what_a_killed_session_planted_is_quarantined_by_the_next_one(repo, tmp_path):
    # SIGKILL (or a crash, or power loss) leaves no clean-up: the next session's baseline took the planted
    # repository for the person's own, gtd's `git add -A` made it a submodule and its next `git add -A`
    # ran the repository's filter.*.clean on the host. Each session's baseline is now on disk until it closes.
    import signal
    import subprocess
    import sys

    marker = tmp_path / "PWNED"
    plant = (f"git init -q sub && {_evil_config(marker, 'sub/.git/config')} && echo '* filter=x' > sub/.gitattributes"
             " && mkdir -p pkg/.claude && git init -q --bare stash.git && echo planted && sleep 60")
    run = [sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--"]
    proc = subprocess.Popen([*run, "sh", "-c", plant], cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "planted\n"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert os.path.isdir(repo / "sub/.git")  # nothing closed the session
    after = subprocess.run([*run, "true"], cwd=repo, capture_output=True, text=True, timeout=120)
    assert after.returncode == 0, after.stderr
    for gone in ("sub/.git", "pkg/.claude", "stash.git"):
        assert not os.path.lexists(repo / gone) and f"{repo}/{gone} (" in after.stderr, (gone, after.stderr)
    assert _host_git_runs(repo, marker) == []
    assert list((repo.parent / "home").glob("**/baselines/*.json")) == []  # both sessions' baselines are gone


def test_a_left_over_baseline_whose_pid_is_alive_again_is_still_settled(repo, tmp_path):
    # A killed session's baseline was taken for a running one while its pid was alive: after a reboot the pid
    # names another process, so the journal was skipped forever and its plants became the next baseline.
    # Only a journal its session still holds (an flock, dropped with the process) is left alone.
    import json

    from gtd.sandbox.host.gitguard import _JOURNALED, GitState, _journal_dir, remember, settle

    baseline = GitState(dot_git={str(repo / ".git")})
    running = remember(baseline, repo)
    left_over = _journal_dir(repo) / "left-over.json"  # the pid of a live process, nothing holding it
    left_over.write_text(json.dumps({"pid": os.getpid(), "names": [],
                                     **{k: sorted(getattr(baseline, k)) for k in _JOURNALED}}))
    git("init", "-q", "sub", cwd=repo)
    try:
        settled = settle(GitState(), repo, tmp_path / "quarantine")
        assert [p for p, _ in settled] == [repo / "sub/.git"] and not os.path.lexists(repo / "sub/.git"), settled
        assert not left_over.exists() and running.path.exists()  # the running session's is its own to remove
    finally:
        running.close()
    assert list(_journal_dir(repo).iterdir()) == []


def test_dot_git_cannot_be_replaced_by_a_gitdir_file(sandbox, repo):
    # (`rm -rf .git` does empty the objects and refs at readwrite: destructive, but not an escape.)
    s = sandbox(Level.READWRITE)
    r = sh(s, "mkdir -p evil; mv .git old; rm -rf .git; echo 'gitdir: evil' > .git; echo done", repo)
    assert "done" in r.out
    assert (repo / ".git").is_dir() and not (repo / ".git").is_symlink(), r.err
    assert (repo / ".git/config").is_file() and (repo / ".git/hooks").is_dir()
    assert not (repo / "old").exists()


def test_missing_include_if_target_cannot_be_created(sandbox, repo):
    from sandbox_support import git

    git("config", "includeIf.gitdir:/.path", "../inc/local.gitconfig", cwd=repo)
    s = sandbox(Level.READWRITE)
    sh(s, "mkdir -p inc; printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' > inc/local.gitconfig", repo)
    s.close()
    assert not (repo / "inc/local.gitconfig").exists() or (repo / "inc/local.gitconfig").stat().st_size == 0


def test_proxy_token_is_not_on_any_command_line(sandbox, repo):
    # Host processes can read every argv (`ps`); the token only lives in the sandbox's environment.
    s = sandbox(Level.READWRITE)
    proc = s.popen(["/bin/sh", "-c", "sleep 5"], cwd=repo)
    try:
        assert s.token not in " ".join(proc.args)
    finally:
        proc.kill()
        proc.wait()


def test_sibling_linked_worktrees_keep_their_commondir(sandbox, repo, tmp_path):
    """A sandbox run in one linked worktree must not take the other worktrees' existing `commondir`
    (reached through `../..`) for planted metadata: quarantining it breaks every sibling worktree."""
    git("worktree", "add", "-q", str(tmp_path / "wt-a"), "-b", "a", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "wt-b"), "-b", "b", cwd=repo)
    s = sandbox(Level.READWRITE, workspace=tmp_path / "wt-a")
    sh(s, "echo work > f", tmp_path / "wt-a")
    s.close()
    for name in ("wt-a", "wt-b"):
        assert (repo / ".git/worktrees" / name / "commondir").is_file(), name
    assert not [v for v in s.violations if "quarantine" in v.detail], s.violations


def test_a_planted_repository_nested_too_deep_to_remove_is_reported_not_a_crash(repo, tmp_path):
    # The removal that follows a failed move walks the tree recursively (locked_tree, shutil.rmtree): a
    # chain of ~1200 directories the agent made in it raised RecursionError, which nothing caught: gtd's
    # close crashed with a traceback instead of telling the person not to run git there.
    import subprocess

    plant = "git init -q sub && mkdir -p sub/.git/objects/$(printf 'd/%.0s' $(seq 1200)) && echo planted"
    try:
        r = _sandbox_run_with_quarantine_blocked(repo, plant)
    finally:  # pytest's own clean-up of old tmp dirs is recursive too: a chain left here crashes a later run
        subprocess.run(["rm", "-rf", str(repo / "sub")], check=True)
    assert "planted" in r.stdout, r.stderr
    assert "RecursionError" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert f"{repo}/sub/.git (" in r.stderr and "COULD NOT REMOVE" in r.stderr and "do not run git here" in r.stderr, r.stderr
