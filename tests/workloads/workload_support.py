"""Helpers for the workload tests (imported by name: tests/workloads is on sys.path)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gtd.config.schema import GtdConfig
from registries import REGISTRY_HOST


def allow_registry(port: int, level: str = "network", *, name: bool = True) -> GtdConfig:
    """Config that lets `registry.test` (a loopback address in the tests) through at a level. The proxy
    refuses names resolving to loopback unless the address itself is allowed too, so that is always in;
    `name=False` leaves the name out (it must then come from the user's registry settings).
    Inside the sandbox 127.0.0.1 is the sandbox's own: `hostLoopbackPorts` forwards the registry's port
    there, for the tests that use the same URL inside and outside (so cache keys match)."""
    allow = [f"127.0.0.1:{port}"] + ([f"{REGISTRY_HOST}:{port}"] if name else [])
    return GtdConfig.model_validate({"sandbox": {"levels": {level: {"allowDomains": allow, "hostLoopbackPorts": [port]}}}})


def run(session, script: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    """A shell script inside the sandbox (session) or on the host (session=None), text output."""
    if session is None:
        return subprocess.run(["/bin/sh", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    r = session.run(["/bin/sh", "-c", script], cwd=cwd, timeout=timeout)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))
