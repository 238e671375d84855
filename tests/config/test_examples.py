"""The ready configs in examples/ and this repository's own .gtdrc.json are valid and mean what they say."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gtd.config.files import read_config_file
from gtd.config.loader import load_config
from gtd.config.schema import Level
from gtd.config.validation import validate_layer
from gtd.providers.base import SandboxNeeds
from gtd.sandbox.policy.domains import DomainRules
from gtd.sandbox.policy.sandbox_policy import build_policy
from support import git

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*/.gtdrc.json"))


def test_every_example_is_listed():
    assert {p.parent.name for p in EXAMPLES} == {"python-project", "node-project", "team", "strict-offline",
                                                  "headless-ci"}


@pytest.mark.parametrize("path", EXAMPLES + [ROOT / ".gtdrc.json"], ids=lambda p: str(p.relative_to(ROOT)))
def test_config_file_is_valid_against_the_schema(path, repo):
    raw = read_config_file(path)
    validate_layer(raw, str(path))  # raises ConfigError naming the file and key
    shutil.copy(path, repo / ".gtdrc.json")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    loaded = load_config(repo)
    assert not loaded.warnings, loaded.warnings
    assert loaded.config.test_command


def _policy(example: str, level: Level, repo):
    config = load_config(repo).config
    return build_policy(config, workspace=repo, level=level, needs=SandboxNeeds(model_hosts=["api.anthropic.com:443"]))


def test_strict_offline_reaches_the_model_api_and_never_a_registry(repo):
    shutil.copy(ROOT / "examples/strict-offline/.gtdrc.json", repo / ".gtdrc.json")
    for level in (Level.READONLY, Level.READWRITE, Level.NETWORK):
        policy = _policy("strict-offline", level, repo)
        rules = DomainRules.parse(policy.reachable, policy.deny_domains)
        assert rules.decide("api.anthropic.com", 443) == "allow", level
        assert rules.decide("registry.npmjs.org", 443) == "deny", level
        assert rules.decide("files.pythonhosted.org", 443) == "deny", level
        assert rules.decide("example.com", 443) != "allow", level


def test_team_example_saved_approvals_are_concrete_rules(repo):
    data = json.loads((ROOT / "examples/team/.gtdrc.json").read_text())
    levels = data["sandbox"]["levels"]
    assert levels["readwrite"]["allowDomains"] == ["api.github.com:443"]  # host:port, never a wildcard
    assert all("*" not in d for level in levels.values() for d in level.get("allowDomains", []))


def test_headless_ci_script_is_valid_shell():
    subprocess.run(["sh", "-n", str(ROOT / "examples/headless-ci/run-gtd.sh")], check=True)
