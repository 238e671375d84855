"""The seatbelt backend (macOS): each command under `sandbox-exec` with the policy rendered as a profile
(seatbelt.py). The proxy listens on the host's loopback, the only place the profile lets commands connect."""

from __future__ import annotations

import subprocess

from gtd.errors import SandboxUnavailable
from gtd.sandbox.backend import DOCTOR_HINT, Backend, loopback_listener
from gtd.which import which


class SeatbeltBackend(Backend):
    name = "seatbelt"
    binds_files = False  # the registry settings are read where they are written

    def start(self) -> None:
        if which("sandbox-exec") is None:
            raise SandboxUnavailable(f"sandbox-exec not found. {DOCTOR_HINT}")
        s = self.session
        s.make_proxy()
        listener = loopback_listener()
        s.proxy_port = listener.getsockname()[1]
        s._proxy.serve(listener)

    def popen(self, argv, cwd, env, stdin, stdout, stderr) -> subprocess.Popen:
        from gtd.host_programs import host_program
        from gtd.sandbox.macos.seatbelt import render_profile

        s = self.session
        profile = render_profile(s.policy, proxy_port=s.proxy_port)
        s._tree_writable = True  # the profile is not inspected here: walk the tree as before
        sandbox_exec = host_program("sandbox-exec", s.untrusted_dirs()) or "/usr/bin/sandbox-exec"
        proc = subprocess.Popen(
            [sandbox_exec, "-p", profile, *argv], cwd=cwd, env=s.environment(env),
            stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True,
        )
        with s._lock:
            s._children.append((proc, None))
        return proc
