"""A sandbox that cannot start says why in bubblewrap's own words, on every start path (issue 21).

bwrap's stderr is the command's, so its one line ("Can't create file at ...") went wherever the command's
output went, and gtd reported what failed next: the proxy port it could not open in a namespace that was
already gone. The failures here are real bwrap failures, forced by a `bwrap` in front of the real one that
adds a bind of a source that does not exist."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.exitcodes import ExitCode
from sandbox_support import requires_bwrap
from support import explain, git, run_gtd

pytestmark = [requires_bwrap, pytest.mark.bwrap]

MISSING_SOURCE = "/nonexistent/gtd-forced-start-failure"


@pytest.fixture
def failing_bwrap(tmp_path, monkeypatch) -> Path:
    """PATH with a `bwrap` that runs the real one with one impossible mount first."""
    real = shutil.which("bwrap")
    wrapper_dir = tmp_path / "wrapped-bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "bwrap"
    # --version and the minimal probe still work: only a start with mounts fails, as the real bug did.
    wrapper.write_text(f"#!/bin/sh\ncase \"$*\" in *--dev*) exec {real} --ro-bind {MISSING_SOURCE} /gtd-x \"$@\";; "
                       f"esac\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}")
    return wrapper


def _says_bwraps_own_line(text: str) -> None:
    assert f"Can't find source path {MISSING_SOURCE}" in text, text
    assert "proxy port" not in text, text  # not the step that only failed because bwrap had died


@pytest.mark.parametrize("level", ["readonly", "readwrite", "network"])
def test_sandbox_run_shows_bwraps_own_error(failing_bwrap, repo, level):
    result = run_gtd("sandbox", "run", "--level", level, "--", "true", cwd=repo)
    assert result.returncode == ExitCode.SANDBOX_UNAVAILABLE, explain(result)
    error = [line for line in result.stderr.splitlines() if line.startswith("gtd: error")]
    assert error, explain(result)
    _says_bwraps_own_line(error[0])


def test_a_phase_shows_bwraps_own_error(failing_bwrap, repo, tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"plan": [{"actions": [{"write": {"path": "TODO.md", "content": "# x\n"}}]}]}))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(script)}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    result = run_gtd("plan", "a goal", cwd=repo)
    assert result.returncode == ExitCode.SANDBOX_UNAVAILABLE, explain(result)
    _says_bwraps_own_line(result.stderr.split("gtd: error", 1)[-1])


def test_session_error_names_bwraps_line_not_the_proxy(failing_bwrap, repo):
    from gtd.errors import SandboxUnavailable
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE)
    with open_sandbox(policy) as session:
        with pytest.raises(SandboxUnavailable) as caught:
            session.run(["true"], cwd=repo, timeout=30)
    _says_bwraps_own_line(str(caught.value))


def test_doctor_fails_where_the_start_fails(failing_bwrap, repo):
    result = run_gtd("doctor", "--json", cwd=repo)
    rows = {row["name"]: row for row in json.loads(result.stdout)["checks"]}
    start = rows["sandbox start"]
    assert not start["ok"], start
    _says_bwraps_own_line(start["detail"])


def test_a_symlink_at_a_protected_name_of_a_writable_root_leaves_no_placeholder_to_fail_on(repo, isolated_home):
    """A link at a protected name directly in a writable root makes the whole root read-only; a missing
    protected name in the same root then needed a placeholder bwrap could not create there."""
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox
    from gtd.providers.base import SandboxNeeds

    state = isolated_home / "tool-state"
    state.mkdir()
    (state / "settings.json").symlink_to(isolated_home / "elsewhere.json")
    needs = SandboxNeeds(writable_dirs=[state], protected_paths=[state / "settings.json", state / "hooks.json"])
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, needs=needs, home=isolated_home)
    with open_sandbox(policy) as session:
        result = session.run(["sh", "-c", f"touch {state}/new 2>&1; echo ok"], cwd=repo, timeout=30)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert out.endswith("ok\n") and "Read-only file system" in out, out  # the root is read-only, and it started
    assert not (state / "hooks.json").exists()
