"""gtd's own installation: visible to the sandboxed command wherever it lives (even under the
private /tmp), and never writable by the agent even when it sits inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import gtd
from sandbox_support import requires_bwrap, sh

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.sandbox_policy import build_policy, runtime_roots
from gtd.sandbox.session import open_sandbox

PACKAGE = Path(gtd.__file__).resolve().parent


def test_gtd_package_and_interpreter_are_protected_and_runtime_visible(tmp_path):
    policy = build_policy(GtdConfig(), workspace=PACKAGE.parent, level=Level.READWRITE)
    assert PACKAGE in policy.protected
    assert Path(os.path.realpath(os.sys.prefix)) in policy.protected
    assert PACKAGE.parent in runtime_roots() or any(PACKAGE.is_relative_to(r) for r in runtime_roots())


@requires_bwrap
def test_agent_cannot_modify_gtd_inside_its_workspace():
    """A developer running gtd from the repo (or a project .venv) it works on: the agent may edit the
    workspace, but not the code the host runs as gtd next time."""
    probe = PACKAGE / "zz_sandbox_probe.py"
    policy = build_policy(GtdConfig(), workspace=PACKAGE.parent, level=Level.READWRITE)
    try:
        with open_sandbox(policy) as session:
            result = sh(session, f"echo 'import os' > {probe}; echo rc=$?", cwd=PACKAGE.parent)
        assert "rc=0" not in result.out
        assert not probe.exists()
    finally:
        if probe.exists():
            probe.unlink()


@requires_bwrap
def test_scripted_agent_runs_when_everything_lives_under_tmp(repo):
    """CI clones can live under /tmp, which is private in the sandbox: gtd's interpreter must still run."""
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READONLY)
    with open_sandbox(policy) as session:
        result = sh(session, f"{os.sys.executable} -c 'import gtd.providers.scripted_agent; print(42)'", cwd=repo)
    assert result.returncode == 0, result.err
    assert result.out.strip() == "42"
