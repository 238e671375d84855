"""Helpers for tests (importable as `support` thanks to pytest's pythonpath setting)."""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def run_gtd(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real `gtd` entry point in a subprocess (stdin closed: a headless run)."""
    return subprocess.run([sys.executable, "-m", "gtd", *args], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})}, timeout=timeout)


def agent_work_recorded(repo: Path, paths: list[str], seconds: float = 30) -> None:
    """Wait until gtd's record of the agent's work (gtd.workflow.leftovers) holds exactly these paths: gtd
    records it after each tool result it has read, so a test that kills gtd waits for this first."""
    import time

    from gtd.workflow import leftovers

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        work = leftovers.pending(repo, forget_done=False)
        if work is not None and work.all_paths == paths:
            return
        time.sleep(0.1)
    raise AssertionError(f"gtd never recorded {paths} as the agent's work")


def as_the_owner() -> list[str]:
    """A command prefix under which file modes bind as they do for the person running gtd: root's DAC
    override dropped when the suite runs as root (which ignores `chmod 0000`), nothing otherwise."""
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def launcher_command(launcher: str) -> list[str]:
    """The sandbox's launcher to run by hand: "native" (launch.c, built; skips without a C compiler) or "python"."""
    import pytest

    from gtd.sandbox.linux.kernel import LAUNCHER
    from gtd.sandbox.linux.nativelaunch import launcher_path

    if launcher == "python":
        return [sys.executable, "-I", "-S", str(LAUNCHER)]
    if launcher_path() is None:
        pytest.skip("no C compiler here: only the Python launcher can run")
    return [str(launcher_path())]


def spawn_in_terminal(command: str, args: list[str], **kwargs):
    """pexpect.spawn as a person's interactive shell starts a command: SIGINT at its default action,
    so Ctrl-C (sendintr) reaches it. A test run started as a background job of a non-interactive
    shell (`pytest ... &` in a script) has SIGINT ignored; Python keeps an inherited SIG_IGN and
    every child inherits it through exec, so the spawned gtd would never see Ctrl-C."""
    import pexpect

    return pexpect.spawn(command, args, preexec_fn=_default_signals, **kwargs)


def popen_as_from_a_shell(argv: list[str], **kwargs):
    """subprocess.Popen with SIGINT and SIGHUP at their default actions, as a person's shell starts a
    command: under `nohup` or as a background job (how CI may start the suite) both are inherited
    ignored, and gtd rightly leaves an ignored signal ignored."""
    return subprocess.Popen(argv, preexec_fn=_default_signals, **kwargs)


def _default_signals() -> None:  # runs in the forked child, before exec
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@contextlib.contextmanager
def serving(body: bytes, *, certificate: tuple[Path, Path] | None = None) -> Iterator[int]:
    """A loopback server standing in for a registry, every GET answering `body`; HTTPS with
    `certificate` (cert, key). Yields its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if certificate:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*certificate)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def stop_listening(listener: socket.socket, thread: threading.Thread) -> None:
    """Stop a test server's accept loop: shut the listener down (which wakes the blocked accept()), wait
    for the thread to leave, and only then close. Closing first lets a thread that is about to call
    accept() reach whatever socket reuses the descriptor number next (another test's server)."""
    try:
        listener.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    thread.join(10)
    listener.close()


def configure_scripted(repo: Path, script: dict) -> None:
    """Commit a .gtdrc.json naming the scripted provider with `script` (kept beside the repo) and a
    TODO.md, as a person would before running gtd."""
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(path)}, indent=2) + "\n")
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")


@contextlib.contextmanager
def sandboxes(workspace: Path, home: Path, **session_defaults) -> Iterator[Callable]:
    """A factory of started sandbox sessions, all closed on exit:
    make(level, config=..., needs=..., phase=..., workspace=..., **session kwargs)."""
    from gtd.config.schema import GtdConfig, Level
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    opened = []

    def make(level: Level = Level.READWRITE, *, config: GtdConfig | None = None, needs=None, phase=None,
             workspace: Path = workspace, **kw):
        policy = build_policy(config or GtdConfig(), workspace=workspace, level=level, phase=phase, needs=needs, home=home)
        opened.append(open_sandbox(policy, **{**session_defaults, **kw}))
        return opened[-1]

    try:
        yield make
    finally:
        for session in opened:
            session.close()


def explain(result: subprocess.CompletedProcess) -> str:
    """A failed gtd run's exit status and output tails, for assertion messages."""
    return f"exit {result.returncode}\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-4000:]}"


_SGR = r"(?:\x1b\[[0-9;]*m)*"


def seen(literal: str) -> str:
    """A pexpect pattern for `literal` as it appears on a colour terminal (styles may split it anywhere)."""
    return _SGR.join(re.escape(char) for char in literal)


def uncoloured(text: str) -> str:
    """`text` without colour/style sequences (what a person reads)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


class Screen:
    """The real `gtd` on a pseudo-terminal (colours on, like a person's), and every byte it wrote (`text`)."""

    def __init__(self, *args: str, cwd: Path, env: dict | None = None, timeout: float = 120):
        full_env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50", **(env or {})}
        full_env.pop("NO_COLOR", None)
        self._log = io.StringIO()
        self.child = spawn_in_terminal(sys.executable, ["-m", "gtd", *args], cwd=str(cwd), env=full_env,
                                       encoding="utf-8", codec_errors="replace", timeout=timeout, dimensions=(50, 160))
        self.child.logfile_read = self._log

    @property
    def text(self) -> str:
        return self._log.getvalue()

    def finish(self, timeout: float = 120) -> int:
        import pexpect

        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0)

    def stop(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
