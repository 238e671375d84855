"""`gtd doctor`: reports what works and, when the sandbox cannot start, says so with exit code 3."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from support import run_gtd

from gtd.paths import user_config_file


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_doctor_json_reports_sandbox_and_providers(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted"}))  # ok without any agent CLI
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


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_doctor_fails_when_no_agent_cli_is_there_for_provider_auto(repo):
    """With `provider: auto` and none of the agent CLIs installed, no phase can run: doctor says so and exits 1
    (it exited 0 with only '--' lines); with the scripted provider configured no CLI is needed."""
    env = {"PATH": "/usr/bin:/bin"}  # the agent CLIs live elsewhere (.tools/agents/bin, a global npm prefix)
    if any(os.path.exists(f"{d}/{cli}") for d in ("/usr/bin", "/bin") for cli in ("claude", "opencode", "pi")):
        pytest.skip("an agent CLI is installed system-wide")
    result = run_gtd("doctor", "--json", cwd=repo, env=env)
    data = json.loads(result.stdout)
    failed = {c["name"]: c for c in data["checks"] if c["required"] and not c["ok"]}
    assert result.returncode == 1 and not data["ok"] and set(failed) == {"agent CLI"}, result.stdout
    assert "install one of them" in failed["agent CLI"]["fix"]
    user_config = user_config_file()  # the person's choice of agent CLI (a project file's needs `gtd trust`)
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text('provider = "claude"\n')
    failed = [c["name"] for c in json.loads(run_gtd("doctor", "--json", cwd=repo, env=env).stdout)["checks"]
              if c["required"] and not c["ok"]]
    assert failed == ["provider claude"]  # the configured one is what is missing
    user_config.write_text('provider = "scripted"\n')
    assert run_gtd("doctor", "--json", cwd=repo, env=env).returncode == 0


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_doctors_sandbox_start_covers_the_network_layer_a_build_phase_needs(monkeypatch):
    """The probe starts a readwrite sandbox: a readonly one has no proxy port or DNS inside, so it passed
    for a non-root developer whose every build phase failed to set up the sandbox's network."""
    from gtd.sandbox.diagnose import doctor
    from gtd.sandbox.linux import netns

    def cannot(layout):
        raise OSError("no sockets in this namespace")

    monkeypatch.setattr(netns, "_create", cannot)  # the forked helper inherits it
    check = doctor._smoke_test()
    assert not check["ok"] and "no sockets in this namespace" in check["detail"], check
    monkeypatch.undo()
    check = doctor._smoke_test()
    assert check["ok"] and "readwrite" in check["detail"], check


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_bubblewrap_older_than_gtd_needs_is_named_with_its_version(repo, tmp_path):
    """Debian 11's bubblewrap 0.4 runs the minimal probe and then stops at `--perms`: gtd said "bwrap works in
    a minimal run; check the paths in the policy". It names the version and the one it needs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    old = bin_dir / "bwrap"  # the real bwrap, with 0.4's version and its answer to an option it lacks
    old.write_text("#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --version) echo 'bubblewrap 0.4.1'; exit 0;;\n"
                   "--perms) echo 'bwrap: Unknown option --perms' >&2; exit 1;; esac; done\n"
                   f"exec {shutil.which('bwrap')} \"$@\"\n")
    old.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = run_gtd("sandbox", "run", "--", "true", cwd=repo, env=env)
    assert result.returncode == 3 and "is bubblewrap 0.4.1; gtd needs 0.5.0 or later" in result.stderr, result.stderr
    checks = {c["name"]: c for c in json.loads(run_gtd("doctor", "--json", cwd=repo, env=env).stdout)["checks"]}
    assert not checks["bubblewrap"]["ok"] and "0.4.1" in checks["bubblewrap"]["detail"], checks["bubblewrap"]
    assert checks["bubblewrap"]["fix"] and not checks["sandbox start"]["ok"]
