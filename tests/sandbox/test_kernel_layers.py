"""Red-team regressions for the kernel-level layers under bubblewrap: set-id modes refused by seccomp,
inherited descriptors that could be reopened for writing, host special files (Landlock), and resource
limits. Each test runs real bwrap with a temporary HOME and repository, and fails on the code before
the layer existed."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

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
