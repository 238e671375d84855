"""`gtd doctor`: reports what works and, when the sandbox cannot start, says so with exit code 3."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from support import run_gtd


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_doctor_json_reports_sandbox_and_providers(repo):
    result = run_gtd("doctor", "--json", cwd=repo)
    data = json.loads(result.stdout)
    names = {check["name"]: check for check in data["checks"]}
    assert result.returncode == 0 and data["ok"], result.stdout
    assert names["git"]["ok"] and names["config"]["ok"]
    assert any(name.startswith("sandbox") or "bwrap" in name for name in names)
    assert {"provider claude", "provider opencode", "provider pi", "provider scripted"} & set(names)


def test_doctor_without_bubblewrap_fails_with_exit_3_and_a_fix(repo, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git", "python3"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    result = run_gtd("doctor", "--json", cwd=repo, env={"PATH": str(bin_dir)})
    data = json.loads(result.stdout)
    assert result.returncode == 3
    failed = [c for c in data["checks"] if not c["ok"] and c["required"]]
    assert failed and any("bubblewrap" in (c["fix"] + c["detail"]).lower() or "bwrap" in (c["fix"] + c["detail"]) for c in failed)


def test_sandboxed_phase_refuses_to_run_without_bubblewrap(repo, tmp_path):
    """Fails closed: no bwrap => exit 3 and nothing runs unsandboxed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git", "python3", "sh"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted"}))
    (repo / "TODO.md").write_text("# Goal\n")
    result = run_gtd("plan", cwd=repo, env={"PATH": str(bin_dir)})
    assert result.returncode == 3, result.stderr
    assert "bubblewrap" in result.stderr and "gtd doctor" in result.stderr
    assert "📝" not in run_gtd("config", "show", cwd=repo).stdout  # sanity: nothing planned
    assert not os.path.exists(repo / "count.py")
