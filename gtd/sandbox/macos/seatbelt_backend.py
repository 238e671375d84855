"""The seatbelt backend (macOS): each command under `sandbox-exec` with the policy rendered as a profile
(seatbelt.py). No network namespace: the proxy and the model credential gateway listen on the host's loopback,
each at a port of its own, the only places the profile lets commands connect."""

from __future__ import annotations

import subprocess

from gtd.errors import SandboxUnavailable
from gtd.sandbox.backend import DOCTOR_HINT, Backend, loopback_listener, serve_gateway_on_loopback
from gtd.which import which


class SeatbeltBackend(Backend):
    name = "seatbelt"
    binds_files = False  # the registry settings are read where they are written
    serves_model_gateway = True  # on the host's loopback, beside the proxy (its port allowed by the profile)

    def __init__(self, session):
        super().__init__(session)
        self._listener = None
        self._gateway_listener = None

    def start(self) -> None:
        if which("sandbox-exec") is None:
            raise SandboxUnavailable(f"sandbox-exec not found. {DOCTOR_HINT}")
        s = self.session
        s.make_proxy()
        self._listener = loopback_listener()
        s.proxy_port = self._listener.getsockname()[1]
        s._proxy.serve(self._listener)
        if s.credentials is not None:
            self._gateway_listener = serve_gateway_on_loopback(s.credentials)
            self.gateway_port = self._gateway_listener.getsockname()[1]

    def popen(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        from gtd.host_programs import host_program
        from gtd.sandbox.macos.seatbelt import render_profile

        s = self.session
        profile = render_profile(s.policy, proxy_port=s.proxy_port, gateway_port=self.gateway_port)
        s._tree_writable = True  # the profile is not inspected here: walk the tree as before
        sandbox_exec = host_program("sandbox-exec", s.untrusted_dirs()) or "/usr/bin/sandbox-exec"
        proc = subprocess.Popen(
            [sandbox_exec, "-p", profile, *argv], cwd=cwd, env=s.environment(env),
            stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
        )
        with s._lock:
            s._children.append((proc, None))
        return proc

    def close(self) -> None:
        """Every command was killed: stop serving the gateway and the proxy on the loopback."""
        s = self.session
        if self._gateway_listener is not None and s.credentials is not None:
            s.credentials.stop_serving(self._gateway_listener)
            self._gateway_listener.close()
            self._gateway_listener = None
        if self._listener is not None and s._proxy is not None:
            s._proxy.stop_serving(self._listener)
            self._listener = None
