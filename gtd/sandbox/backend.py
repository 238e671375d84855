"""The interface every sandbox backend implements: how the session starts, runs and closes sandboxed
commands on one OS mechanism (bubblewrap: gtd.sandbox.linux.bwrap_backend; seatbelt:
gtd.sandbox.macos.seatbelt_backend).

The session (gtd.sandbox.session) keeps what is the same everywhere: the policy, the filtering proxy,
the registry settings, placeholders and the git guard on the host, the command's environment and the
violations. A backend adds only what its mechanism needs, and fails closed: `start` raises
SandboxUnavailable with what to do, never returns a backend that would run a command unsandboxed.
"""

from __future__ import annotations

import subprocess

DOCTOR_HINT = "Run `gtd doctor` for details."


class Backend:
    """One OS sandbox mechanism, bound to one session (`self.session`)."""

    name = "none"
    # Whether it serves the model credential gateway inside the sandbox (network/credential_gateway.py).
    serves_model_gateway = False
    gateway_port: int | None = None  # where the CLI reaches the model gateway, when not the namespace's GATEWAY_PORT

    def __init__(self, session):
        self.session = session

    def start(self) -> None:
        """Set up what every command of the session shares (run once, before the first command)."""

    def popen(self, argv: list[str], cwd, env: dict | None, stdin, stdout, stderr) -> subprocess.Popen:
        """Start one command inside the sandbox; its process group is its own."""
        raise NotImplementedError

    def prepare_host(self, registry) -> None:
        """Host-side preparation once the placeholder registry exists (bwrap: its mount points); none by default."""

    def environment(self) -> dict[str, str]:
        """Variables this backend adds to every command's environment (a cache layer's locations)."""
        return {}

    def signal_command(self, proc: subprocess.Popen, signum: int) -> None:
        """Send `signum` to the command's process group(s), as the terminal would."""
        import os

        try:
            os.killpg(proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        """Once every command was killed: wait until nothing inside can still write, release what start made."""


def loopback_listener():
    """A listening TCP socket on the host's loopback at a port the kernel picks: where a backend without a
    network namespace of its own (Landlock, seatbelt) serves the proxy and the model gateway."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    return listener


def serve_gateway_on_loopback(credentials):
    """The model credential gateway on the host's loopback, for a backend without a network namespace (Landlock,
    seatbelt): the listener (its port for the CLI's base URL and the backend's network rules). Any local process
    can reach that port, so the gateway puts a real key only in place of this session's placeholder. Each
    login's placeholder file is written where the CLI looks for its login (there is no mount to lay it over): it
    holds placeholders only, and the policy keeps it read-only inside."""
    from pathlib import Path

    from gtd import workspace_files

    for where, stand_in in credentials.login_files():
        target = Path(where)  # never through a link the agent left there
        workspace_files.write_bytes(target.parent, target.name, stand_in)
    listener = loopback_listener()
    credentials.serve(listener)
    return listener
