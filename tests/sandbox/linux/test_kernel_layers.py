"""Red-team regressions for the kernel-level layers under bubblewrap: set-id modes refused by seccomp,
inherited descriptors that could be reopened for writing, host special files (Landlock), and resource
limits. Each test runs real bwrap with a temporary HOME and repository, and fails on the code before
the layer existed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.config.schema import Level

from sandbox_support import py, requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]

SETID = stat.S_ISUID | stat.S_ISGID


# -- set-id bits (seccomp) ---------------------------------------------------------------------

@pytest.mark.parametrize("script", [
    "chmod u+s tool",
    "chmod g+s tool",
    "chmod 6755 tool",
    "install -m 4755 /bin/true tool",
    "cp tool t2 && chmod 4755 t2 && mv t2 tool",
])
def test_set_id_modes_are_refused_and_never_reach_the_host(sandbox, repo, script):
    (repo / "tool").write_text("#!/bin/sh\n")
    os.chmod(repo / "tool", 0o755)
    s = sandbox(Level.READWRITE)
    r = sh(s, f"{script}; echo rc=$?", repo)
    assert "rc=0" not in r.out and "Operation not permitted" in r.err, r.out + r.err
    for name in ("tool", "t2"):
        if (repo / name).exists():
            assert not os.stat(repo / name).st_mode & SETID, (name, oct(os.stat(repo / name).st_mode))


@pytest.mark.parametrize("call", [
    "os.open('new', os.O_CREAT | os.O_WRONLY, 0o4755)",
    "os.open('new', os.O_CREAT | os.O_WRONLY, 0o2755)",
    "os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755)",
    "os.mknod('new', 0o4644 | stat.S_IFREG)",
    "os.chmod('tool', 0o4755)",
    "os.chmod('tool', 0o2755, follow_symlinks=False)",
    "os.fchmod(os.open('tool', os.O_RDONLY), 0o4755)",
])
def test_set_id_modes_are_refused_in_every_syscall_that_sets_a_mode(sandbox, repo, call):
    (repo / "tool").write_text("x\n")
    s = sandbox(Level.READWRITE)
    r = py(s, f"import os, stat\ntry:\n    {call}\n    print('DONE')\nexcept OSError as e:\n    print('refused', e.errno)\n", repo)
    assert r.out.strip() in ("refused 1", "refused 38"), r.out + r.err  # EPERM (ENOSYS: no fchmodat2 fallback)
    for entry in repo.iterdir():
        assert not os.lstat(entry).st_mode & SETID, entry


def test_ordinary_modes_still_work(sandbox, repo):
    (repo / "tool").write_text("#!/bin/sh\necho ran\n")
    s = sandbox(Level.READWRITE)
    r = sh(s, "chmod +x tool && ./tool && install -m 755 tool t2 && mkdir -m 700 d && ls -ld d", repo)
    assert r.returncode == 0, r.out + r.err
    assert "ran" in r.out and os.access(repo / "t2", os.X_OK)
    r = py(s, "import os; os.close(os.open('n', os.O_CREAT | os.O_WRONLY, 0o755)); print(oct(os.stat('n').st_mode & 0o7777))", repo)
    assert r.out.strip() == "0o755", r.out + r.err


# -- inherited descriptors ---------------------------------------------------------------------

def gtd_sandbox_run(script: str, cwd, **streams) -> subprocess.CompletedProcess:
    """`gtd sandbox run` at readonly with the given host stdio (files the test opened)."""
    streams.setdefault("stdin", subprocess.DEVNULL)
    streams.setdefault("stdout", subprocess.PIPE)
    streams.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readonly", "--", "sh", "-c", script],
                          cwd=cwd, timeout=60, **streams)


@pytest.mark.parametrize("attack", [
    "echo pwned > /proc/self/fd/0",
    "echo pwned >> /proc/self/fd/0",
    "exec 3<>/dev/stdin; echo pwned >&3",
    "cat - > /dev/null; truncate -s 0 /proc/self/fd/0",
])
def test_a_file_given_as_stdin_cannot_be_written_through_proc(repo, tmp_path, attack):
    victim = tmp_path / "input.txt"
    victim.write_text("original\n")
    with open(victim, "rb") as stdin:
        r = gtd_sandbox_run(attack, repo, stdin=stdin)
    assert victim.read_text() == "original\n", r.stderr


def test_a_file_given_as_stdin_is_still_read_in_full(repo, tmp_path):
    data = tmp_path / "input.bin"
    data.write_bytes(os.urandom(300_000))
    with open(data, "rb") as stdin:
        r = gtd_sandbox_run("sha256sum -", repo, stdin=stdin)
    import hashlib

    assert r.returncode == 0 and r.stdout.split()[0].decode() == hashlib.sha256(data.read_bytes()).hexdigest()


def test_an_output_file_gets_the_output_and_cannot_be_rewritten_from_the_start(repo, tmp_path):
    out = tmp_path / "log.txt"
    out.write_text("earlier line\n")
    with open(out, "ab") as stdout:
        r = gtd_sandbox_run("echo one; echo two >&2; printf X > /proc/self/fd/1; : > /proc/self/fd/2; echo three",
                            repo, stdout=stdout, stderr=subprocess.STDOUT)
    assert out.read_text() == "earlier line\none\ntwo\nXthree\n", r  # X went down the pipe, in order


def test_which_streams_are_relayed(tmp_path):
    from gtd.sandbox.stdio import needs_relay

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r, w = os.pipe()
    named = os.open(fifo, os.O_RDWR)
    regular = os.open(tmp_path / "f", os.O_CREAT | os.O_RDONLY)
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        assert needs_relay(named) and needs_relay(regular)
        assert not needs_relay(r) and not needs_relay(w) and not needs_relay(null)
    finally:
        for fd in (r, w, named, regular, null):
            os.close(fd)


# -- host special files (Landlock) -------------------------------------------------------------

needs_landlock = pytest.mark.skipif(not __import__("gtd.sandbox.linux.landlock").sandbox.linux.landlock.abi_version(),
                                    reason="this kernel has no Landlock")


@pytest.fixture(params=["native", "python"])
def launcher(request, monkeypatch):
    """Each Landlock and rlimit test runs with both launchers: the native one (launch.c, built by
    scripts/setup or on first use) and the Python fallback (launch.py), which must apply the same rules."""
    import gtd.sandbox.linux.nativelaunch as nativelaunch

    if request.param == "python":
        monkeypatch.setattr(nativelaunch, "launcher_bytes", lambda **kw: None)
    elif nativelaunch.launcher_bytes() is None:
        pytest.skip("no C compiler here: only the Python launcher can run")
    return request.param


@pytest.fixture
def outside_tmp():
    """A host directory outside /tmp (the sandbox's private /tmp is writable as a whole, and every
    mount under it with it: see docs/security-model.md, residual risks)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="gtd-kernel-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def var_repo(outside_tmp):
    from sandbox_support import git

    r = outside_tmp / "repo"
    r.mkdir()
    git("init", "-q", cwd=r)
    (r / "README.md").write_text("hello\n")
    return r


def _fifo_with_reader(path: Path) -> int:
    os.mkfifo(path)
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a host reader: a writer's open succeeds


def _drain(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""
    finally:
        os.close(fd)


@needs_landlock
@pytest.mark.parametrize("level", [Level.READONLY, Level.READWRITE])
def test_host_fifo_outside_the_writable_paths_cannot_be_written(launcher, sandbox, repo, outside_tmp, level):
    reader = _fifo_with_reader(outside_tmp / "fifo")
    s = sandbox(level)
    r = sh(s, f"echo LEAKED > {outside_tmp}/fifo; echo rc=$?", repo)
    assert _drain(reader) == b"", r.out + r.err
    assert "Permission denied" in r.err


@needs_landlock
def test_fifo_in_a_read_only_workspace_cannot_be_written(launcher, sandbox, var_repo):
    from gtd.config.schema import Phase

    reader = _fifo_with_reader(var_repo / "notes.fifo")
    s = sandbox(Level.READONLY, phase=Phase.PLAN, workspace=var_repo)
    r = sh(s, "echo LEAKED > notes.fifo; echo '# plan' > TODO.md; cat TODO.md", var_repo)
    assert _drain(reader) == b"", r.out + r.err
    assert r.out.strip() == "# plan"  # the phase's own file is still written in place


@needs_landlock
def test_writable_paths_stay_writable_and_protected_ones_refused_under_landlock(launcher, sandbox, var_repo):
    reader = _fifo_with_reader(var_repo / "own.fifo")
    s = sandbox(Level.READWRITE, workspace=var_repo)
    r = sh(s, "set -e; echo ok > new.txt; mkdir -p a/b; mv new.txt a/b/; ln -s a/b/new.txt link; : > a/b/new.txt;"
              " echo t > /tmp/t; mkfifo /tmp/f; echo data > own.fifo;"
              " (echo x > .git/hooks/pre-commit) 2>/dev/null || echo hooks-refused;"
              " (echo x > .git/config) 2>/dev/null || echo config-refused; echo done", var_repo)
    assert r.out.split() == ["hooks-refused", "config-refused", "done"], r.out + r.err
    assert _drain(reader) == b"data\n"  # a FIFO inside a writable path is the workspace's own
    assert (var_repo / "a/b/new.txt").exists() and not (var_repo / ".git/hooks/pre-commit").exists()


@needs_landlock
def test_the_terminal_stays_writable_through_dev_stdout(launcher, sandbox, repo):
    import pty

    s = sandbox(Level.READONLY)
    leader, follower = pty.openpty()
    try:
        proc = s.popen(["/bin/sh", "-c", "echo via-dev-stdout > /dev/stdout; echo rc=$?"], cwd=repo,
                       stdin=subprocess.DEVNULL, stdout=follower, stderr=subprocess.STDOUT)
        os.close(follower)
        proc.wait(timeout=30)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
    assert b"via-dev-stdout" in out and b"rc=0" in out, out


# -- resource limits ---------------------------------------------------------------------------

def _limited(processes: int = 0, memory: str = "none"):
    from gtd.config.schema import GtdConfig

    return GtdConfig.model_validate({"sandbox": {"limits": {"processes": processes, "memory": memory}}})


FORK_BOMB = (
    "import os, signal, time\n"
    "n = 0\n"
    "try:\n"
    "    while n < 5000:\n"
    "        if os.fork() == 0:\n"
    "            time.sleep(60); os._exit(0)\n"
    "        n += 1\n"
    "except OSError as e:\n"
    "    print('stopped at', n, e.errno, flush=True)\n"
    "else:\n"
    "    print('UNBOUNDED', n, flush=True)\n"
    "os.killpg(0, signal.SIGKILL)\n"
)


def _pids_enforced() -> bool:
    from gtd.sandbox.linux.limits import cgroup_support

    return "pids" in cgroup_support() or os.geteuid() != 0  # RLIMIT_NPROC does not bind host root


@pytest.mark.skipif(not _pids_enforced(), reason="root without a writable pids cgroup: no process limit applies")
def test_a_fork_bomb_stops_at_the_configured_process_limit(sandbox, repo):
    s = sandbox(Level.READWRITE, config=_limited(processes=64))
    r = py(s, FORK_BOMB, repo, timeout=120)
    assert r.out.startswith("stopped at"), r.out + r.err
    assert int(r.out.split()[2]) < 64


MEMORY_HOG = "b = bytearray(1 << 30)\nprint('ALLOCATED', len(b))\n"


def test_a_memory_hog_over_the_configured_limit_is_stopped(sandbox, repo):
    s = sandbox(Level.READWRITE, config=_limited(memory="256M"))
    r = py(s, MEMORY_HOG, repo, timeout=120)
    assert "ALLOCATED" not in r.out and r.returncode != 0, r.out + r.err


def test_without_cgroups_rlimits_still_stop_a_memory_hog(launcher, sandbox, repo, monkeypatch):
    import gtd.sandbox.linux.kernel as kernel

    monkeypatch.setattr(kernel, "cgroup_support", lambda: {})
    s = sandbox(Level.READWRITE, config=_limited(memory="256M"))
    r = py(s, MEMORY_HOG, repo, timeout=120)
    assert "MemoryError" in r.err and "ALLOCATED" not in r.out, r.out + r.err


SPREAD_HOG = (
    "import os, time\n"
    "kids = []\n"
    "for _ in range(4):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        b = bytearray(150 << 20)\n"  # 150 MiB each, touched: under any per-process limit
    "        time.sleep(2)\n"  # all four resident at once
    "        os._exit(0)\n"
    "    kids.append(pid)\n"
    "print([os.waitpid(k, 0)[1] for k in kids])\n"
)


@pytest.mark.skipif("memory" not in __import__("gtd.sandbox.linux.limits").sandbox.linux.limits.cgroup_support(),
                    reason="no writable memory cgroup here: memory is limited per process only")
def test_the_memory_limit_holds_for_the_whole_process_tree(sandbox, repo):
    s = sandbox(Level.READWRITE, config=_limited(memory="256M"))
    r = py(s, SPREAD_HOG, repo, timeout=120)
    statuses = eval(r.out.strip()) if r.out.strip() else []
    assert r.returncode != 0 or any(st != 0 for st in statuses), r.out + r.err
    s.close()
    assert any(v.kind == "limit" and v.target == "sandbox.limits.memory" for v in s.violations), s.violations


def test_a_real_workload_runs_under_the_default_limits(sandbox, repo):
    s = sandbox(Level.READWRITE)  # defaults: 8192 processes, 80% of RAM
    r = sh(s, "for i in $(seq 200); do sleep 2 & done; " + f"{sys.executable} -c 'b = bytearray(512 << 20); print(len(b))'; wait; echo done", repo, timeout=120)
    assert r.out.split() == [str(512 << 20), "done"], r.out + r.err


def test_explain_shows_the_limits(repo):
    (repo / ".gtdrc.json").write_text('{"provider": "scripted", "sandbox": {"limits": {"processes": 500, "memory": "2G"}}}')
    import json

    r = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "explain", "--level", "readwrite", "--json"], cwd=repo,
                       capture_output=True, text=True, timeout=60)
    limits = json.loads(r.stdout)["limits"]
    assert limits["processes"] == 500 and limits["memory"] == "2G", limits
    r = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "explain", "--level", "readwrite"], cwd=repo,
                       capture_output=True, text=True, timeout=60)
    assert "processes: 500" in r.stdout and "memory: 2G" in r.stdout, r.stdout


@pytest.mark.parametrize("memory", ['"lots"', "5", '"512k"'])
def test_a_bad_memory_limit_is_a_config_error_naming_the_key(repo, memory):
    """`memory = 5` (meant 5G; a bare number counts bytes) would kill every command at start."""
    (repo / ".gtdrc.json").write_text('{"sandbox": {"limits": {"memory": %s}}}' % memory)
    r = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "run", "--", "true"], cwd=repo, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "sandbox.limits.memory" in r.stderr, r.stderr


def test_an_untrusted_project_cannot_raise_or_remove_the_limits(repo):
    from gtd.config.loader import load_config
    from gtd.escalation.trust import filter_untrusted_project, loosening_entries

    raised = {"sandbox": {"limits": {"processes": 0, "memory": "none"}}}
    assert loosening_entries(raised) == ["sandbox.limits.processes: 0", "sandbox.limits.memory: none"]
    assert loosening_entries({"sandbox": {"limits": {"processes": 100, "memory": "1G"}}}) == []  # tightening
    (repo / ".gtdrc.json").write_text('{"sandbox": {"limits": {"processes": 0, "memory": "64M"}}}')
    limits = load_config(repo, project_filter=filter_untrusted_project).config.sandbox.limits
    assert limits.processes == 8192 and limits.memory == "64M"  # the raise is dropped, the tightening kept


def test_doctor_reports_landlock_and_the_limits():
    import json

    r = subprocess.run([sys.executable, "-m", "gtd", "doctor", "--json"], capture_output=True, text=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    from gtd.sandbox.linux.landlock import abi_version

    abi = abi_version()
    assert checks["Landlock"]["ok"] is bool(abi) and checks["Landlock"]["required"] is False
    assert (f"ABI {abi}" in checks["Landlock"]["detail"]) if abi else "not available" in checks["Landlock"]["detail"]
    assert "resource limits" in checks
    from gtd.sandbox.linux.nativelaunch import launcher_bytes

    native = launcher_bytes(build=False) is not None  # scripts/setup built it, or an earlier start did
    assert checks["sandbox launcher"]["ok"] is native and checks["sandbox launcher"]["required"] is False
    assert ("native" in checks["sandbox launcher"]["detail"]) is native
    from gtd.sandbox.network.nativerelay import library_path

    compiler = any(shutil.which(cc) for cc in ("cc", "gcc", "clang"))
    assert checks["proxy relay"]["ok"] is compiler and checks["proxy relay"]["required"] is False
    assert ("native" in checks["proxy relay"]["detail"]) is compiler
    assert library_path().is_file() is compiler  # doctor built it into this test's state dir


def test_cgroups_left_by_a_killed_gtd_are_swept_and_each_command_leaves_none(sandbox, repo):
    from gtd.sandbox.linux.limits import cgroup_support

    support = cgroup_support()
    if "pids" not in support:
        pytest.skip("no writable pids cgroup here")
    parent = support["pids"][1]
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = parent / f"gtd-{dead.pid}-0"
    stale.mkdir()
    s = sandbox(Level.READWRITE, config=_limited(processes=100))
    assert sh(s, "true", repo).returncode == 0
    assert not stale.exists()
    s.close()
    assert not [p for p in parent.iterdir() if p.name.startswith(f"gtd-{os.getpid()}-")]


def test_each_command_runs_in_a_cgroup_of_its_own_the_first_made_at_start_and_none_outlive_the_session(sandbox, repo):
    """start() makes the first command's cgroup before the priming move (a mkdir would wait for that move on
    the command's start path): that command runs in it, the next in a new one, and a session closed before
    running anything leaves its unused cgroup behind neither."""
    from gtd.sandbox.linux.limits import cgroup_support

    support = cgroup_support()
    if "pids" not in support:
        pytest.skip("no writable pids cgroup here")
    parent = support["pids"][1]

    def ours() -> list[str]:
        return sorted(p.name for p in parent.iterdir() if p.name.startswith(f"gtd-{os.getpid()}-"))

    idle = sandbox(Level.READONLY, config=_limited(processes=100))
    made = ours()
    assert len(made) == 1  # the spare, made by start()
    idle.close()
    assert ours() == []
    s = sandbox(Level.READONLY, config=_limited(processes=100))
    spare = ours()
    marker = ":pids:" if support["pids"][0] == "v1" else "0::"
    names = [next(line.rsplit("/", 1)[1] for line in sh(s, "cat /proc/self/cgroup", repo).stdout.decode().splitlines()
                  if marker in line) for _ in range(2)]
    assert names[0] == spare[0] and names[1] != names[0] and names[1].startswith(f"gtd-{os.getpid()}-")
    s.close()
    assert ours() == []


def test_the_landlock_abi_is_probed_once_per_boot_and_context_and_probed_again_otherwise(monkeypatch):
    """KernelLayers takes the kernel's Landlock ABI from gtd's state dir (no ctypes on `gtd sandbox run`'s
    path): remembered with the boot, namespaces and seccomp state it was probed under, and probed again
    whenever any of them differs or the entry is damaged."""
    from gtd import paths
    from gtd.sandbox.linux import kernel
    from gtd.sandbox.linux.landlock import abi_version

    remembered = paths.user_state_dir() / "cache" / "landlock-abi"
    assert kernel.landlock_abi() == abi_version()
    context = kernel._probe_context()
    assert context is not None and remembered.read_text() == f"{context}\n{abi_version()}"
    remembered.write_text(f"{context}\n{abi_version() + 5}")  # what this context said is what is used
    assert kernel.landlock_abi() == abi_version() + 5
    monkeypatch.setattr(kernel, "_probe_context", lambda: context + " another boot")
    assert kernel.landlock_abi() == abi_version()  # probed again, and remembered for that context
    assert remembered.read_text() == f"{context} another boot\n{abi_version()}"
    remembered.write_text(f"{context} another boot\nseven")
    assert kernel.landlock_abi() == abi_version()
    monkeypatch.setattr(kernel, "_probe_context", lambda: None)  # unreadable: never taken from the file
    remembered.write_text(f"{context}\n{abi_version() + 5}")
    assert kernel.landlock_abi() == abi_version()


def test_the_first_cgroup_made_before_the_policy_is_taken_only_for_the_same_limits(sandbox, repo):
    """`gtd sandbox run` makes the first command's cgroup (and primes the move) once the config is read
    (limits.make_ready): the session runs its first command in it when its limits are the ones it was made
    for, removes it otherwise, and one no session took is removed by drop_ready."""
    from gtd.sandbox.linux import limits

    support = limits.cgroup_support()
    if "pids" not in support:
        pytest.skip("no writable pids cgroup here")
    parent = support["pids"][1]

    def ours():
        return sorted(p.name for p in parent.iterdir() if p.name.startswith(f"gtd-{os.getpid()}-"))

    limits.make_ready(limits.ResourceLimits(processes=100))
    ready = ours()
    assert len(ready) == 1 and (parent / ready[0] / "pids.max").read_text().strip() == "100"
    s = sandbox(Level.READONLY, config=_limited(processes=100))
    marker = ":pids:" if support["pids"][0] == "v1" else "0::"
    inside = next(line.rsplit("/", 1)[1] for line in sh(s, "cat /proc/self/cgroup", repo).stdout.decode().splitlines()
                  if marker in line)
    assert inside == ready[0]
    s.close()
    assert ours() == []
    limits.make_ready(limits.ResourceLimits(processes=100))
    other = ours()
    s = sandbox(Level.READONLY, config=_limited(processes=50))  # other limits: not that cgroup
    assert other[0] not in ours() and (parent / ours()[0] / "pids.max").read_text().strip() == "50"
    s.close()
    limits.make_ready(limits.ResourceLimits(processes=100))
    assert len(ours()) == 1
    limits.drop_ready()
    assert ours() == []
    limits.make_ready(limits.ResourceLimits())  # no limit: nothing made
    assert ours() == []


def test_priming_the_cgroup_move_leaves_gtd_in_its_own_cgroup():
    """prime_moves (session start) moves gtd into the cgroup it already is in: nothing changes."""
    from gtd.sandbox.linux.limits import prime_moves

    before = Path("/proc/self/cgroup").read_text()
    prime_moves()
    assert Path("/proc/self/cgroup").read_text() == before


def test_priming_never_moves_gtd_into_a_cgroup_it_is_not_in(tmp_path, monkeypatch):
    """Where mount point + gtd's own path names another cgroup (a bind-mounted subtree), prime_moves
    writes nothing there: only a cgroup already listing gtd is written."""
    from gtd.sandbox.linux import limits

    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "cgroup.procs").write_text("1\n")
    monkeypatch.setattr(limits, "_mounts", lambda: [(str(tmp_path), "cgroup2", set())])
    monkeypatch.setattr(limits, "_own_cgroups", lambda: {"": "/elsewhere"})
    limits.prime_moves()
    assert (other / "cgroup.procs").read_text() == "1\n"
    (other / "cgroup.procs").write_text(f"1\n{os.getpid()}\n")  # listed: the no-op move is written
    limits.prime_moves()
    assert (other / "cgroup.procs").read_text() == str(os.getpid())


def test_a_limit_the_command_ran_into_is_reported_with_the_setting_to_raise(repo):
    from gtd.sandbox.linux.limits import cgroup_support

    if "pids" not in cgroup_support():
        pytest.skip("no writable pids cgroup here: the kernel does not say when an rlimit was hit")
    (repo / ".gtdrc.json").write_text('{"provider": "scripted", "sandbox": {"limits": {"processes": 40}}}')
    (repo / "bomb.py").write_text(FORK_BOMB)
    r = subprocess.run([sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--", sys.executable, "bomb.py"],
                       cwd=repo, capture_output=True, text=True, timeout=120)
    assert "refused limit sandbox.limits.processes" in r.stderr and "raise sandbox.limits.processes" in r.stderr, r.stderr


def test_landlock_never_allows_a_path_the_mounts_do_not_bind_read_write(repo, home):
    from gtd.config.schema import GtdConfig
    from gtd.sandbox.linux.bwrap import render_mounts
    from gtd.sandbox.linux.kernel import PRIVATE_WRITABLE, landlock_writable
    from gtd.sandbox.policy.sandbox_policy import build_policy

    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, home=home)
    args = render_mounts(policy).args
    assert str(repo) in landlock_writable(policy, args)
    without = [a if a != "--bind" else "--ro-bind" for a in args]  # mounts that bind nothing read-write
    assert landlock_writable(policy, without) == list(PRIVATE_WRITABLE)


@needs_landlock
def test_the_native_launcher_runs_in_front_of_the_command_as_a_read_only_copy(launcher, sandbox, repo):
    """Which launcher runs is visible inside (pid 1's command line); the native copy cannot be changed."""
    s = sandbox(Level.READWRITE)
    r = sh(s, "tr '\\0' ' ' < /proc/1/cmdline; echo; (: > /tmp/.gtd-launch/launch) 2>/dev/null || echo copy-read-only", repo)
    first = r.out.splitlines()[0]
    if launcher == "native":
        assert " -- /tmp/.gtd-launch/launch --nproc " in first and "launch.py" not in first, r.out
        assert "copy-read-only" in r.out
    else:
        assert "launch.py --nproc " in first and "/tmp/.gtd-launch/launch --nproc" not in first, r.out


def test_the_native_launcher_fails_closed_like_the_python_one(tmp_path):
    """Bad arguments, a missing command and a missing program: the Python launcher's exit codes."""
    from gtd.sandbox.linux.nativelaunch import launcher_bytes
    from gtd.sandbox.linux.kernel import LAUNCHER

    data = launcher_bytes()
    if data is None:
        pytest.skip("no C compiler here")
    native = tmp_path / "launch"
    native.write_bytes(data)
    native.chmod(0o755)
    python = [sys.executable, "-I", "-S", str(LAUNCHER)]
    for args, code in ((["--"], 126), (["--", "no-such-program-gtd"], 127), (["--nproc", "8", "--", "true"], 0)):
        assert subprocess.run([str(native), *args], capture_output=True).returncode == code, args
        assert subprocess.run([*python, *args], capture_output=True).returncode == code, args
    assert subprocess.run([str(native), "--nproc", "lots", "--", "true"], capture_output=True).returncode == 126


def test_the_launcher_is_built_on_first_use_and_a_failing_compiler_means_the_python_one(tmp_path, monkeypatch):
    import shutil

    import gtd.sandbox.linux.nativelaunch as nativelaunch

    if not shutil.which("cc"):
        pytest.skip("no C compiler here")
    monkeypatch.setattr(nativelaunch, "locations", lambda: [tmp_path / "beside-the-module", tmp_path / "state"])
    data = nativelaunch.launcher_bytes()
    assert data and (tmp_path / "state" / nativelaunch.binary_name()).read_bytes() == data
    monkeypatch.setattr(nativelaunch, "locations", lambda: [tmp_path / "other"])
    monkeypatch.setenv("CC", "false")
    assert nativelaunch.launcher_bytes() is None
    assert (tmp_path / "other" / f"{nativelaunch.binary_name()}.failed").exists()  # not tried again per session
    monkeypatch.delenv("CC")
    assert nativelaunch.launcher_bytes() is None


@needs_landlock
def test_a_remembered_landlock_abi_of_none_never_turns_landlock_off(sandbox, repo, outside_tmp):
    """The one answer that would leave a layer off is never taken from gtd's state dir: an entry saying
    this kernel has no Landlock (a probe that failed under another seccomp filter with the same counts,
    a hand edit) is probed again, and host FIFOs stay unwritable."""
    from gtd import paths
    from gtd.sandbox.linux import kernel

    remembered = paths.user_state_dir() / "cache" / "landlock-abi"
    remembered.parent.mkdir(parents=True, exist_ok=True)
    remembered.write_text(f"{kernel._probe_context()}\n0")
    reader = _fifo_with_reader(outside_tmp / "fifo")
    r = sh(sandbox(Level.READWRITE), f"echo LEAKED > {outside_tmp}/fifo; echo rc=$?", repo)
    assert _drain(reader) == b"", r.out + r.err
    assert "Permission denied" in r.err


def test_gtd_doctor_probes_the_landlock_abi_again_and_replaces_what_was_remembered(monkeypatch):
    """The way out of a remembered ABI this context no longer gives (the launcher then fails closed and its
    message names `gtd doctor`): doctor's kernel check probes now and remembers that answer, or forgets the
    entry when there is no Landlock here any more."""
    from gtd import paths
    from gtd.sandbox.linux import kernel, landlock

    remembered = paths.user_state_dir() / "cache" / "landlock-abi"
    actual = landlock.abi_version()
    context = kernel._probe_context()
    remembered.parent.mkdir(parents=True, exist_ok=True)
    remembered.write_text(f"{context}\n{actual + 5}")
    assert kernel.status()["landlockAbi"] == actual
    assert remembered.read_text() == f"{context}\n{actual}"
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)  # as under a filter that refuses Landlock
    assert kernel.status()["landlockAbi"] == 0
    assert not remembered.exists()


@pytest.mark.parametrize("launcher_kind", ["native", "python"])
def test_a_launcher_that_cannot_apply_landlock_fails_closed_and_names_gtd_doctor(launcher_kind, tmp_path):
    """Under a seccomp filter that answers Landlock's calls with ENOSYS (what a remembered ABI would meet
    there), the launcher refuses to run the command and says what to run."""
    from gtd.sandbox.linux import nativelaunch

    if launcher_kind == "native":
        native = nativelaunch.launcher_bytes()
        if native is None:
            pytest.skip("no C compiler: no native launcher")
        program = tmp_path / "launch"
        program.write_bytes(native)
        program.chmod(0o755)
        launcher = [str(program)]
    else:
        launcher = [sys.executable, "-I", "-S", str(Path(nativelaunch.__file__).with_name("launch.py"))]
    refuse_landlock = (
        "import errno, os, sys, pyseccomp as sc\n"
        "f = sc.SyscallFilter(sc.ALLOW)\n"
        "f.add_rule(sc.ERRNO(errno.ENOSYS), 'landlock_create_ruleset')\n"
        "f.load()\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )
    r = subprocess.run([sys.executable, "-c", refuse_landlock, *launcher, "--landlock", "3", "--write", str(tmp_path),
                        "--", "sh", "-c", "echo ran"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 126 and "ran" not in r.stdout, (r.returncode, r.stdout, r.stderr)
    assert "cannot apply the kernel limits" in r.stderr and "`gtd doctor`" in r.stderr, r.stderr
