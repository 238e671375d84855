"""The sandbox's network starts reliably (issue 9, class 13: "could not open the proxy port inside the
sandbox: OSError(99, 'Cannot assign requested address')", once in ~2000 starts under load).

Root cause: bwrap reports the sandbox's pid on --info-fd *while* its child is still bringing `lo`
up; gtd bound 127.0.0.1 in the namespace before that. gtd now waits for `lo` to be up (and binds
with IP_FREEBIND), and a sandbox whose network could not be set up is started again, since its
command has not run yet.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from gtd.config.schema import Level
from gtd.sandbox.linux.netns import NamespaceHelper, NamespaceLayout, open_namespace_sockets

from sandbox_support import requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]
# iproute2's `ip` is in /usr/sbin on Debian, off a non-root user's PATH (scripts/test-as-user runs with one).
IP = shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin")


@pytest.mark.skipif(shutil.which("unshare") is None or IP is None, reason="needs util-linux unshare and iproute2")
def test_sockets_wait_for_loopback_instead_of_failing():
    # The state bwrap's loopback set-up passes through: `lo` flagged up, 127.0.0.1 not yet assignable.
    holder = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--net", "sh", "-c",
         f"{IP} link set lo up; {IP} addr del 127.0.0.1/8 dev lo; echo ready; read go; {IP} addr add 127.0.0.1/8 dev lo; echo up; sleep 60"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        result: dict = {}

        def open_sockets():
            try:
                result["sockets"] = open_namespace_sockets(holder.pid, NamespaceLayout(proxy_port=3128, intercept_ports=(443,), dns=True))
            except OSError as exc:
                result["error"] = exc

        worker = threading.Thread(target=open_sockets)
        worker.start()
        time.sleep(0.3)  # let it reach the namespace in that state (the old code failed right there)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "up"
        worker.join(30)
        assert "error" not in result, result.get("error")
        sockets = result["sockets"]
        assert sockets.proxy.getsockname() == ("127.0.0.1", 3128)
        assert [s.getsockname()[1] for s in sockets.intercept] == [443] and len(sockets.dns) >= 1
        for s in sockets.all():
            s.close()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.skipif(shutil.which("unshare") is None or IP is None, reason="needs util-linux unshare and iproute2")
def test_sockets_reach_a_network_namespace_whose_process_moved_to_a_nested_user_namespace():
    # What bwrap run by any user but root does with --dev: the network namespace belongs to a first user
    # namespace (uid mapped to 0 to mount devpts), and the command ends up in a second, nested one.
    # Joining /proc/PID/ns/user (the nested one) gave no capability over the network namespace: setns(net)
    # failed with EPERM and no sandbox with a network layer started for a non-root developer.
    holder = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--net", "sh", "-c",
         f"{IP} link set lo up 2>/dev/null || exit 3; exec unshare --user sh -c 'echo ready; exec sleep 60'"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        if holder.stdout.readline().strip() != "ready":
            pytest.skip("cannot create nested user namespaces here (or no `ip` to bring lo up)")
        assert os.readlink(f"/proc/{holder.pid}/ns/user") != os.readlink("/proc/self/ns/user")
        sockets = open_namespace_sockets(holder.pid, NamespaceLayout(proxy_port=3128, dns=True))
        assert sockets.proxy.getsockname() == ("127.0.0.1", 3128)
        for s in sockets.all():
            s.close()
    finally:
        holder.kill()
        holder.wait()


def test_a_pid_in_the_hosts_own_network_namespace_gets_no_sockets():
    # A sandbox's pid that a host process took (bwrap's child gone, the pid reused): as root, joining
    # "its" namespaces succeeded (the host's user namespace was taken for bwrap without one), and the
    # proxy listener and the route of every address to `lo` went into the host's own network.
    holder = subprocess.Popen(["sleep", "60"])
    try:
        with pytest.raises(OSError) as refused:
            open_namespace_sockets(holder.pid, NamespaceLayout(proxy_port=_free_port()))
        # In words, as the failed start shows it to a person (it was the exception's repr).
        assert str(refused.value) == (f"could not open the proxy port inside the sandbox: process {holder.pid} "
                                      "has no network namespace of its own: not a sandbox"), refused.value
    finally:
        holder.kill()
        holder.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_many_parallel_starts_under_load_all_reach_the_proxy(sandbox, repo):
    """Many sandboxes start at once while the CPUs are busy; every one gets its network."""
    s = sandbox(Level.READWRITE)
    # The load runs in a session of its own, as other work on the machine does. In gtd's own session it
    # would share gtd's scheduler autogroup: each sandboxed command starts its own session (bwrap
    # --new-session), so without a cgroup (any user but root) gtd's DNS and set-up threads got ~1/9 of
    # the CPUs' time and a lookup waited past the resolver's timeouts.
    burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True) for _ in range(os.cpu_count() or 2)]
    failures: list[str] = []
    # Each command proves its proxy port, its DNS and its own loopback are up.
    script = (
        "python3 - <<'EOF'\n"
        "import socket\n"
        "socket.create_connection(('127.0.0.1', 3128), timeout=10).close()\n"
        "assert socket.gethostbyname('pypi.org').startswith('198.18.')\n"
        "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\n"
        "socket.create_connection(srv.getsockname(), timeout=10).close()\n"
        "print('ok')\n"
        "EOF\n"
    )

    def worker(n: int) -> None:
        for _ in range(n):
            try:
                r = sh(s, script, repo, timeout=120)
                if r.out.strip() != "ok":
                    failures.append(f"exit {r.returncode}: {r.err.strip()[-300:]}")
            except Exception as exc:  # noqa: BLE001 - any failure to start is what this test looks for
                failures.append(repr(exc))

    try:
        threads = [threading.Thread(target=worker, args=(15,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert failures == []


def test_a_namespace_helper_that_never_gets_a_pid_exits_and_is_reaped():
    """The helper is forked before bwrap reports the sandbox's pid; when none comes (bwrap failed, the
    mounts moved), close() ends it: it joins no namespace and is gone, not a zombie."""
    helper = NamespaceHelper(NamespaceLayout(proxy_port=3128))
    pid = helper.pid
    helper.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped by close()


def test_a_namespace_helper_that_hangs_is_killed_and_the_start_fails(monkeypatch):
    """A helper stuck after the fork (a lock another thread of gtd held then) never answers: gtd gives up
    after HELPER_REPLY_SECONDS, kills and reaps it, and the sandbox does not start (an error, not a hang)."""
    from gtd.sandbox.linux import netns

    monkeypatch.setattr(netns, "HELPER_REPLY_SECONDS", 0.5)
    monkeypatch.setattr(netns, "_join_namespaces", lambda pid, report: time.sleep(600))  # the child hangs
    helper = NamespaceHelper(NamespaceLayout(proxy_port=3128))
    pid = helper.pid
    started = time.monotonic()
    with pytest.raises(OSError, match="did not answer"):
        helper.sockets_for(os.getpid())
    assert time.monotonic() - started < 60
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # killed and reaped


def test_a_namespace_helper_holds_no_copy_of_another_sandboxs_pipe():
    """The helper is forked while other sandboxes may be starting: bwrap's child reads their data pipes
    (--ro-bind-data) to end of file while it builds its root, so a helper keeping a copy of a write end
    stalled that sandbox mid-setup. It closes every inherited descriptor at once."""
    import select

    r, w = os.pipe()
    helper = NamespaceHelper(NamespaceLayout(proxy_port=3128))  # waits for a pid that never comes
    try:
        os.close(w)  # the last write end but the helper's copy
        ready, _, _ = select.select([r], [], [], 10)
        assert ready and os.read(r, 1) == b""  # end of file while the helper still runs
    finally:
        os.close(r)
        helper.close()


def test_a_gateway_that_fails_to_start_stops_the_command_and_says_why(sandbox, repo, monkeypatch, capfd):
    # The gateway's listeners start beside the command (session._GatewayStarting): when that start fails,
    # nothing would answer the command's connections, so it is killed. Killed without a word, it looked like
    # the command's own crash (exit -9); gtd now says on its stderr what failed.
    from gtd.sandbox.network.namespace_gateway import NamespaceGateway

    def fail(self):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(NamespaceGateway, "start", fail)
    r = sh(sandbox(Level.READWRITE), "sleep 20; echo ran", repo, timeout=60)
    assert r.returncode != 0 and "ran" not in r.out
    err = capfd.readouterr().err
    assert "network could not be started" in err and "Too many open files" in err, err


def test_commands_ending_while_others_start_stop_each_listener_once(sandbox):
    """Commands start from several threads at once (this file's parallel test). Each start first stops the
    listeners of commands that ended; two starts doing that together stopped the same gateway twice, and its
    second close of a pidfd closed whatever descriptor another thread had opened meanwhile (EBADF there)."""
    s = sandbox(Level.READWRITE)
    ended = subprocess.Popen(["true"])
    ended.wait()
    closes: list[int] = []

    class SlowListener:  # a gateway-like listener (close, no accept) whose close takes a moment
        def close(self):
            closes.append(threading.get_ident())
            time.sleep(0.2)

    s._children.append((ended, SlowListener()))
    reapers = [threading.Thread(target=s._reap) for _ in range(2)]
    for t in reapers:
        t.start()
    for t in reapers:
        t.join()
    assert len(closes) == 1
    assert all(proc is not ended for proc, _ in s._children)
