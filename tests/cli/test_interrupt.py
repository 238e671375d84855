"""Ctrl-C in a terminal: the agent and its children stop, gtd exits 130, nothing is committed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pexpect
import pytest
from support import git, popen_as_from_a_shell, spawn_in_terminal

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

PLAN = """# Slow

## Action items
- [ ] Take a long time
  - Tests: none

## Open questions

## Learnings
"""


def agent_processes(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


def planned_with_a_slow_build(repo) -> str:
    """`gtd plan` done with the scripted provider, whose build writes half.txt and then sleeps (in the
    background too); the agent's processes are found by the returned marker."""
    marker = f"sleep {400 + os.getpid() % 10000}.25"  # this run's own: another run's agent may be sleeping too
    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
              "build": [{"actions": [{"write": {"path": "half.txt", "content": "partial"}},
                                     {"shell": f"{marker} & {marker}"}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json")}))
    (repo / "TODO.md").write_text("# Slow\n")
    subprocess.run([sys.executable, "-m", "gtd", "plan"], cwd=repo, check=True, capture_output=True)
    return marker


def wait_for_agent(marker: str, running: bool, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while bool(agent_processes(marker)) != running and time.monotonic() < deadline:
        time.sleep(0.1)


def assert_stopped_and_nothing_committed(repo, marker: str, before: str) -> None:
    wait_for_agent(marker, running=False, seconds=10)
    assert agent_processes(marker) == []  # the whole process group is gone, background child included
    assert git(repo, "log", "--format=%s") == before  # nothing committed
    assert (repo / "half.txt").exists()  # partial work left for the person to keep or discard


def test_ctrl_c_stops_the_agent_tree_and_commits_nothing(repo):
    marker = planned_with_a_slow_build(repo)
    before = git(repo, "log", "--format=%s")

    child = spawn_in_terminal(sys.executable, ["-m", "gtd", "build"], cwd=str(repo), encoding="utf-8", timeout=60)
    child.expect(marker.split(".")[0])  # the tool call is shown as it happens
    wait_for_agent(marker, running=True, seconds=20)
    assert agent_processes(marker), "the agent's shell command should be running"
    child.sendintr()
    child.expect("interrupted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert_stopped_and_nothing_committed(repo, marker, before)


@pytest.mark.parametrize("signames, options", [
    (["SIGTERM"], []), (["SIGHUP", "SIGTERM"], []),
    (["SIGHUP"], ["--quiet", "-q"]),  # declined by the fast entry: typer runs it
])
def test_sigterm_or_sighup_ends_a_phase_as_ctrl_c_does(repo, signames, options):
    """`kill`, a closed terminal, a cancelled CI job: the phase ends through Ctrl-C's clean-up, exit
    128 + the signal: the agent tree stopped, nothing committed, `interrupted` in the audit log, and the
    agent's half-done changes remembered as the agent's (not taken for the person's edits next run).
    A second signal during that clean-up (a closed terminal's SIGHUP, then `kill`) does not cut it short.
    The same when typer runs the command (options the fast entry leaves to it)."""
    import signal

    from gtd.audit import AuditLog
    from gtd.paths import project_state_dir
    from gtd.workflow import leftovers

    marker = planned_with_a_slow_build(repo)
    before = git(repo, "log", "--format=%s")
    proc = popen_as_from_a_shell([sys.executable, "-m", "gtd", "build", *options], cwd=repo, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    try:
        wait_for_agent(marker, running=True, seconds=30)
        assert agent_processes(marker), "the agent's shell command should be running"
        for signame in signames:  # back to back: the second arrives before or during the clean-up
            proc.send_signal(getattr(signal, signame))
        err = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + getattr(signal, signames[0]), err
    assert "interrupted" in err
    assert_stopped_and_nothing_committed(repo, marker, before)
    assert [entry["event"] for entry in AuditLog(repo).read()][-1:] == ["interrupted"]
    left = json.loads((project_state_dir(repo) / leftovers.MARKER).read_text())
    assert (left["phase"], left["reason"]) == ("build", "interrupted")
    work = leftovers.pending(repo, forget_done=False)  # the next run carries on with the agent's work
    assert work is not None and work.paths == ["half.txt"] and work.person == []


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_command_typer_runs_exits_128_plus_the_signal(repo, signame):
    """A root option before `sandbox` leaves the command to typer (the fast entry declines it), which
    turned the KeyboardInterrupt a SIGTERM or SIGHUP raises (errors.Terminated) into exit 130, as for
    Ctrl-C: a supervisor could not tell `kill` from Ctrl-C. It exits 128 + the signal like the fast path."""
    import signal

    proc = popen_as_from_a_shell([sys.executable, "-m", "gtd", "-C", str(repo), "sandbox", "run", "--level", "readwrite",
                                  "--", "sh", "-c", "echo ready; exec sleep 300"],
                                 cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"  # the command runs: gtd waits for it
        proc.send_signal(getattr(signal, signame))
        err = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + getattr(signal, signame), err
    assert "interrupted" in err


def _sandbox_run_in_terminal(repo, *command: str):
    """`gtd sandbox run --level readwrite -- COMMAND` in a terminal of its own (pexpect)."""
    return spawn_in_terminal(sys.executable, ["-m", "gtd", "sandbox", "run", "--level", "readwrite", "--", *command],
                             cwd=str(repo), encoding="utf-8", timeout=30)


def test_ctrl_c_under_gtd_sandbox_run_reaches_the_command_so_it_can_shut_down(repo):
    """bwrap's new session keeps the terminal's SIGINT from the command: gtd passes it on, so a dev server
    shuts down cleanly with its own status, instead of being SIGKILLed (exit 137, no clean-up)."""
    if shutil.which("node") is None:
        pytest.skip("needs node")
    server = ("process.on('SIGINT', () => { console.log('cleaned up'); process.exit(3) });"
              "require('http').createServer().listen(0, () => console.log('listening'))")
    child = _sandbox_run_in_terminal(repo, "node", "-e", server)
    child.expect("listening")
    child.sendintr()
    child.expect("cleaned up")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 3

    # `exec sleep`: a SIGINT to the group while dash is vfork()ing `sleep` (signals blocked, just after its
    # echo) reaches dash but not the new child, and dash then waits for it, as with a terminal's own Ctrl-C
    # in that window; the test's Ctrl-C comes right after the echo, so it hit that window 1 run in 20.
    child = _sandbox_run_in_terminal(repo, "sh", "-c", "echo waiting; exec sleep 300")
    child.expect("waiting")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130  # ended by the SIGINT itself, as outside gtd


def test_ctrl_c_in_a_shell_under_gtd_sandbox_run_keeps_the_shell_and_three_quick_ones_kill(repo):
    child = _sandbox_run_in_terminal(repo, "bash", "--norc", "--noprofile", "-i")
    child.sendline("PS1=READY-; echo sandbox-$GTD_SANDBOX")
    child.expect("sandbox-readwrite")
    child.sendintr()
    time.sleep(2.5)  # longer than any grace period: an interactive shell survives Ctrl-C, as in a terminal
    child.sendline("echo still-here")
    child.expect("still-here")
    child.sendline("exit 5")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 5

    child = _sandbox_run_in_terminal(repo, "sh", "-c", "trap '' INT; echo deaf; sleep 300")
    child.expect("deaf")
    for _ in range(3):
        child.sendintr()
        time.sleep(0.2)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 137  # SIGKILL: a command that ignores SIGINT still stops


def test_gtd_sandbox_run_started_immune_to_sigint_stays_immune(repo):
    """A background job of a script (`gtd sandbox run -- make &`) starts with SIGINT ignored: a SIGINT
    sent to the group is not passed on to the command."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--",
                             "sh", "-c", "echo started; sleep 2; echo finished"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.stdout.readline() == "started\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == "finished\n", out + err


def _signal_other_threads_until_it_ends(proc: subprocess.Popen, signum: int) -> str:
    """Deliver `signum` to one of gtd's threads other than the main one (tgkill), as the kernel may for any
    signal sent to the process (the proxy's and the stdio pumps' threads are there while a command runs).
    A signal sent to a thread that is just ending is lost with it, so each thread is tried in turn, with
    5 s for gtd to end; gtd's stderr once it has."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    threads = sorted(int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid)
    assert threads, "gtd sandbox run should have threads besides the main one"
    for tid in threads:
        if libc.syscall(234, proc.pid, tid, signum) != 0:  # SYS_tgkill on x86_64; ESRCH: that thread ended
            continue
        try:
            return proc.communicate(timeout=5)[1]
        except subprocess.TimeoutExpired:
            continue
    raise AssertionError(f"gtd did not end after {signum} reached each of its other threads")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="tgkill's number is x86_64's")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_delivered_to_another_thread_of_gtd_is_handled_at_once(repo, signame):
    """The kernel hands a process's signal to any thread; Python runs the handler only in the main thread,
    which sat in waitpid() until the command ended: Ctrl-C never reached the command, and `kill` waited
    for it. Now the wait wakes up: SIGINT reaches the command, SIGTERM ends
    gtd through its clean-up, both long before the command's 300 s."""
    import signal

    signum = getattr(signal, signame)
    proc = popen_as_from_a_shell([sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite", "--",
                                  "sh", "-c", "echo started; exec sleep 300"], cwd=repo, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "started\n"
        err = _signal_other_threads_until_it_ends(proc, signum)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signum, err  # SIGINT: the command's own status; SIGTERM: gtd's
