"""The original TypeScript gtd's config: every key translated or ignored with a warning, its files
found, JS/TS never executed, `gtd config migrate` rewriting a file and showing the diff."""

from __future__ import annotations

import json

import pytest
from support import git, run_gtd

from gtd.config.loader import load_config
from gtd.config.original import translate
from gtd.errors import ConfigError

EVERY_KEY = {
    "$schema": "https://raw.githubusercontent.com/pmelab/gtd/main/schema.json",
    "_comment": "example", "file": "TODO.md", "agent": "claude", "agentPlan": "pi", "agentBuild": "pi",
    "agentLearn": "pi", "modelPlan": "p", "modelBuild": "b", "modelLearn": "l", "modelCommit": "c",
    "modelExplore": "e", "testCmd": "npm test", "testRetries": 10, "commitPrompt": "{{diff}}",
    "agentInactivityTimeout": 0, "sandboxEnabled": True,
    "sandboxBoundaries": {"plan": "restricted", "build": "standard", "learn": "restricted",
                          "filesystem": {"allowRead": ["/opt"], "allowWrite": ["/tmp/out"]},
                          "network": {"allowedDomains": ["api.example.com"]}},
    "sandboxEscalationPolicy": "prompt", "sandboxApprovedEscalations": [{"from": "standard", "to": "elevated"}],
    "approvedEscalations": [{"from": "restricted", "to": "standard"}], "vars": {"x": 1}, "modes": {},
}


def test_every_original_key_is_translated_or_ignored_with_a_warning(repo):
    (repo / ".gtdrc.json").write_text(json.dumps(EVERY_KEY))
    loaded = load_config(repo)
    config = loaded.config
    assert config.provider == "claude"
    assert (config.models.plan, config.models.build, config.models.learn) == ("p", "b", "l")
    assert config.test_command == "npm test" and config.test_retries == 10
    assert config.timeouts.inactivity_seconds == 0  # 0 still means off
    assert config.sandbox.enabled is True
    assert config.sandbox.phases.build.value == "full"  # standard -> network, then approved standard -> elevated
    assert config.sandbox.phases.plan.value == "network"  # approved restricted -> standard
    assert "/tmp/out" in config.sandbox.levels.readwrite.writable_paths
    assert "api.example.com" in config.sandbox.levels.network.allow_domains
    warned = "\n".join(loaded.warnings)
    for key in EVERY_KEY:
        if key not in ("$schema", "testRetries"):
            assert f"'{key}" in warned, key


def test_file_other_than_todo_md_is_an_error_naming_the_key():
    with pytest.raises(ConfigError) as caught:
        translate({"file": "PLAN.md"}, "x.json")
    assert caught.value.key == "file" and "PLAN.md" in str(caught.value)


def test_original_file_names_and_user_locations_are_found(repo, isolated_home):
    (isolated_home / ".gtdrc.json").write_text(json.dumps({"modelPlan": "from-home"}))
    (isolated_home / ".config" / "gtd").mkdir(parents=True)
    (isolated_home / ".config" / "gtd" / ".gtdrc.json").write_text(json.dumps({"modelBuild": "from-xdg"}))
    (repo / ".gtdrc.yaml").write_text("testCmd: make check  # YAML, read with safe_load\n")
    (repo / "package.json").write_text(json.dumps({"name": "x", "gtd": {"agentInactivityTimeout": 77,
                                                                         "modelLearn": "from-package-json"}}))
    result = run_gtd("config", "show", "--origin", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    # a project file's choice of model needs `gtd trust` (and only .gtdrc.json can be trusted)
    assert shown["config"]["models"] == {"plan": "from-home", "build": "from-xdg", "learn": None}
    assert shown["config"]["timeouts"]["inactivitySeconds"] == 77
    assert "models.learn: from-package-json" in result.stderr
    assert shown["config"]["testCommand"] == "make check"
    origins = shown["origins"]
    assert str(isolated_home / ".gtdrc.json") in origins["models.plan"]
    assert "original gtd" in origins["testCommand"] and ".gtdrc.yaml" in origins["testCommand"]


@pytest.mark.parametrize("name", ["gtd.config.js", ".gtdrc.ts", ".gtdrc.cjs"])
def test_js_and_ts_configs_are_never_executed(repo, name, tmp_path):
    marker = tmp_path / "executed"
    (repo / name).write_text(f"require('fs').writeFileSync('{marker}', 'x'); module.exports = {{}}\n")
    result = run_gtd("status", cwd=repo)
    assert result.returncode == 2
    assert name in result.stderr and "never executed" in result.stderr
    assert not marker.exists()


def test_gtd_test_cmd_environment_variable(repo):
    result = run_gtd("config", "show", "--json", cwd=repo, env={"GTD_TEST_CMD": "pytest -x"})
    shown = json.loads(result.stdout)
    assert shown["config"]["testCommand"] == "pytest -x"
    assert any("GTD_TEST_CMD" in w for w in shown["warnings"])


def test_config_migrate_rewrites_atomically_and_shows_the_diff(repo):
    original = {"agent": "pi", "testCmd": "npm test", "sandboxBoundaries": {"network": {"allowedDomains": ["a.example"]}},
                "commitPrompt": "x"}
    (repo / ".gtdrc.json").write_text(json.dumps(original, indent=4) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "original config")
    dry = run_gtd("config", "migrate", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    assert '-    "testCmd": "npm test",' in dry.stdout and '+    "testCommand": "npm test",' in dry.stdout
    assert json.loads((repo / ".gtdrc.json").read_text()) == original  # dry run wrote nothing
    done = run_gtd("config", "migrate", cwd=repo)
    assert done.returncode == 0, done.stderr
    migrated = json.loads((repo / ".gtdrc.json").read_text())
    assert migrated == {"provider": "pi", "testCommand": "npm test",
                        "sandbox": {"levels": {"network": {"allowDomains": ["a.example"]}}}}
    assert (repo / ".gtdrc.json").read_text().startswith('{\n    "')  # the file's own indentation kept
    again = run_gtd("config", "show", cwd=repo)
    assert again.returncode == 0 and "original gtd" not in again.stderr
    assert "nothing to migrate" in run_gtd("config", "migrate", cwd=repo).stderr


def test_init_global_is_an_alias_of_user(repo, isolated_home):
    result = run_gtd("init", "--global", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert (isolated_home / ".config" / "gtd" / "config.toml").exists()
    assert not (repo / ".gtdrc.json").exists()
