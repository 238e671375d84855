"""Refused writes are seen from the sandbox itself (gtd/sandbox/linux/write_watch.py), whatever the command
prints and whatever its exit status: a command that silences its errors still has its refusals shown,
audited and counted. Real bwrap, both launchers, the real `gtd sandbox run`."""

from __future__ import annotations

import json

import pytest

from gtd.config.schema import Level
from sandbox_support import requires_bwrap, sh
from support import run_gtd

pytestmark = [pytest.mark.bwrap, requires_bwrap]

SILENT = ("touch ~/.bashrc-x 2>/dev/null; python3 -c 'open(\"/etc/gtd-y\", \"w\")' 2>/dev/null; "
          "(echo > /etc/gtd-w) 2>/dev/null; mkdir /usr/gtd-d 2>/dev/null; echo done")
# Writes that succeed, or that are not the sandbox's refusals (mkdir of what exists: EEXIST): none may be reported.
ALLOWED = ("echo > /dev/null; mkdir -p /usr/bin; echo x > ok.txt; mkdir -p d/e; mv ok.txt d/; rm d/ok.txt; rmdir d/e; touch /tmp/t; "
           "ln -s /etc /tmp/l; python3 -c 'open(\"/etc/hostname\").read()'; cat /etc/passwd > /dev/null; "
           ": > /dev/stderr; echo done")


@pytest.fixture(params=["native", "python"])
def launcher(request, monkeypatch):
    import gtd.sandbox.linux.nativelaunch as nativelaunch

    if request.param == "python":
        monkeypatch.setattr(nativelaunch, "launcher_bytes", lambda **kw: None)
    elif nativelaunch.launcher_bytes() is None:
        pytest.skip("no C compiler here: only the Python launcher can run")
    return request.param


def test_silenced_refused_writes_are_recorded_with_either_launcher(launcher, sandbox, repo, home):
    s = sandbox(Level.READWRITE)
    r = sh(s, SILENT, repo)
    assert r.returncode == 0 and r.out == "done\n" and r.err == "", r.err
    writes = sorted(v.target for v in s.violations if v.kind == "write")
    assert writes == sorted([str(home / ".bashrc-x"), "/etc/gtd-w", "/etc/gtd-y", "/usr/gtd-d"]), writes
    assert all("not writable at level readwrite" in v.detail for v in s.violations)


def test_writes_that_succeed_or_are_not_refused_by_the_sandbox_are_not_reported(launcher, sandbox, repo):
    s = sandbox(Level.READWRITE)
    r = sh(s, ALLOWED, repo)
    assert r.returncode == 0 and r.out.endswith("done\n"), r.err
    assert s.violations == []


def test_sandbox_run_shows_audits_and_counts_a_refusal_the_command_kept_quiet_about(repo):
    result = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c", SILENT, cwd=repo)
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    refused = [line for line in result.stderr.splitlines() if line.startswith("gtd sandbox: refused write")]
    assert len(refused) == 4, result.stderr
    assert any("/etc/gtd-y (not writable at level readwrite" in line for line in refused)
    audit = json.loads(run_gtd("audit", "--json", cwd=repo).stdout)
    targets = [e["target"] for e in audit if e.get("event") == "violation"]
    assert "/etc/gtd-w" in targets and "/usr/gtd-d" in targets, audit


def test_a_refusal_both_printed_and_watched_is_said_once(repo):
    """The text detection (the command's stderr) and the watch see the same write: one line, one record."""
    result = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c", "echo > /etc/gtd-x; echo done",
                     cwd=repo)
    assert "cannot create /etc/gtd-x: Read-only file system" in result.stderr
    lines = [line for line in result.stderr.splitlines() if "refused write /etc/gtd-x" in line]
    assert len(lines) == 1 and "more time" not in lines[0], result.stderr


def test_a_kernel_that_cannot_let_a_watched_call_go_on_is_not_watched():
    """On 5.0-5.4 a notified call cannot be continued (no FLAG_CONTINUE): it would wait for ever."""
    from gtd.sandbox.linux.write_watch import kernel_supported

    assert kernel_supported("6.18.44") and kernel_supported("5.9.0-1")
    assert not kernel_supported("5.4.0-150-generic") and not kernel_supported("4.19.0") and not kernel_supported("")
