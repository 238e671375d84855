"""Helpers for the workload tests (imported by name: tests/workloads is on sys.path)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

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


def add_greet_packages(registry):
    """gtd-greet 1.2.0 and its dependency gtd-shout 1.0.0 on the local npm registry (npm packs them)."""
    if shutil.which("npm") is None:
        pytest.skip("needs npm (to pack the test packages)")
    registry.add_npm_package("gtd-shout", "1.0.0", "module.exports = s => s.toUpperCase();\n")
    registry.add_npm_package("gtd-greet", "1.2.0", "const shout = require('gtd-shout');\n"
                             "module.exports = n => 'hello ' + shout(n);\n", {"gtd-shout": "^1.0.0"})
    return registry


def greet_project(root: Path) -> Path:
    """An npm project at `root` that depends on gtd-greet."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({"name": "app", "version": "0.0.0", "private": True,
                                                   "dependencies": {"gtd-greet": "^1.0.0"}}))
    return root


def isolate_cargo(monkeypatch) -> None:
    """The machine's cargo settings stay out. A rustup-managed cargo keeps finding its toolchains: they live
    under the person's real home (the password database's), which the test's HOME replaced."""
    for key in list(os.environ):
        if key.startswith("CARGO_"):
            monkeypatch.delenv(key)
    rustup = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".rustup"
    if "RUSTUP_HOME" not in os.environ and (rustup / "toolchains").is_dir():
        monkeypatch.setenv("RUSTUP_HOME", str(rustup))
    monkeypatch.setenv("CARGO_NET_RETRY", "0")
