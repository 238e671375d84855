"""Helpers for provider tests (importable as `provider_support`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gtd.config.schema import Phase
from gtd.providers.base import AgentRequest


class DirectLauncher:
    """Runs the command unsandboxed in its own process group, env added to a minimal env."""

    def __init__(self, passthrough: list[str] | tuple[str, ...] = ()) -> None:
        self.started: list[subprocess.Popen] = []
        self.passthrough = tuple(passthrough)  # like the sandbox: the provider's credential env names

    def popen(self, argv, *, cwd, env=None, stdin=None, stdout=None, stderr=None) -> subprocess.Popen:
        keys = ("PATH", "HOME", "LANG", "TMPDIR", *self.passthrough)
        base = {k: os.environ[k] for k in keys if k in os.environ}
        proc = subprocess.Popen([str(a) for a in argv], cwd=cwd, env={**base, **(env or {})}, stdin=stdin,
                                stdout=stdout, stderr=stderr, start_new_session=True)
        self.started.append(proc)
        return proc


def request_for(cwd: Path, prompt: str = "do it", phase: Phase = Phase.BUILD, **kw) -> AgentRequest:
    return AgentRequest(phase=phase, prompt=prompt, cwd=cwd, **kw)


