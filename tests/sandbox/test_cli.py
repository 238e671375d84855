"""`gtd sandbox explain` / `gtd sandbox run` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sandbox_support import requires_bwrap


def gtd_sandbox(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gtd", "sandbox", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_explain_json_for_a_phase(repo):
    (repo / ".gtdrc.json").write_text('{"provider": "scripted"}')  # no provider state dirs in the policy
    r = gtd_sandbox("explain", "--phase", "plan", "--json", cwd=repo)
    data = json.loads(r.stdout)
    assert data["level"] == "readonly" and data["sandboxed"] is True
    assert data["writable"] == [str(repo / "TODO.md")]
    assert str(repo / ".git/hooks") in data["protected"]


def test_explain_full_says_unsandboxed(repo):
    r = gtd_sandbox("explain", "--level", "full", cwd=repo)
    assert "NOT SANDBOXED" in r.stdout


@requires_bwrap
@pytest.mark.bwrap
def test_run_passes_exit_status_and_reports_refusals(repo):
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c", "echo made > made.txt; exit 7", cwd=repo)
    assert r.returncode == 7
    assert (repo / "made.txt").read_text() == "made\n"


@requires_bwrap
@pytest.mark.bwrap
def test_run_headless_refusal_exits_4_with_the_pending_request(repo):
    r = gtd_sandbox("run", "--level", "readwrite", "--", "sh", "-c",
                    "curl -s --max-time 5 https://example.com; exit 7", cwd=repo)
    assert r.returncode == 4
    assert "refused network example.com:443" in r.stderr
    assert json.loads(r.stdout)["requests"][0]["target"] == "example.com:443"


@requires_bwrap
@pytest.mark.bwrap
def test_run_readonly_blocks_writes(repo):
    r = gtd_sandbox("run", "--level", "readonly", "--", "sh", "-c", "echo x > f", cwd=repo)
    assert r.returncode != 0 and not (repo / "f").exists()
