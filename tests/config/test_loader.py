"""Layering, merging, origins and errors of the config loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtd.config.loader import load_config
from gtd.config.schema import DEFAULT_NETWORK_DOMAINS, Level
from gtd.errors import ConfigError
from gtd.paths import user_config_dir


def write_user(text: str, name: str = "config.toml") -> Path:
    path = user_config_dir() / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_project(repo: Path, data) -> Path:
    path = repo / ".gtdrc.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_defaults_only(repo):
    loaded = load_config(repo)
    assert loaded.config.provider == "auto"
    assert loaded.config.sandbox.phases.plan == Level.READONLY
    assert loaded.config.sandbox.phases.build == Level.READWRITE
    assert loaded.files == []
    assert loaded.repo_root == repo


def test_layers_override_scalars_in_order(repo):
    write_user('provider = "pi"\ntestRetries = 5\nplanRetries = 7\n')
    write_project(repo, {"provider": "opencode", "testRetries": 1})
    loaded = load_config(repo, {"provider": "claude"})
    assert loaded.config.provider == "claude"  # flags beat project
    assert loaded.config.test_retries == 1  # project beats user
    assert loaded.config.plan_retries == 7  # user beats defaults
    origins = loaded.origins()
    assert origins["provider"] == "command line"
    assert origins["testRetries"].startswith("project (")
    assert origins["planRetries"].startswith("user (")
    assert origins["maxBuildSteps"] == "defaults"


def test_lists_union_across_layers_and_name_every_contributor(repo):
    write_user('[sandbox.levels.network]\nallowDomains = ["example.org:443"]\n')
    write_project(repo, {"sandbox": {"levels": {"network": {"allowDomains": ["example.org:443", "pkg.test:443"],
                                                            "denyDomains": ["pypi.org"]}}}})
    loaded = load_config(repo)
    allowed = loaded.config.sandbox.levels.network.allow_domains
    assert allowed == DEFAULT_NETWORK_DOMAINS + ["example.org:443", "pkg.test:443"]  # union, order kept, no duplicates
    assert loaded.config.sandbox.levels.network.deny_domains == ["pypi.org"]
    origin = loaded.origins()["sandbox.levels.network.allowDomains"]
    assert origin.startswith("defaults + user (") and "+ project (" in origin


def test_no_layer_can_remove_a_default_secret_denial(repo):
    write_project(repo, {"sandbox": {"levels": {"readonly": {"denyReadPaths": []}}}})
    loaded = load_config(repo)
    assert "~/.ssh" in loaded.config.sandbox.levels.readonly.deny_read_paths


def test_user_config_may_be_json(repo):
    write_user('{"provider": "pi"}', name="config.json")
    assert load_config(repo).config.provider == "pi"


@pytest.mark.parametrize(
    ("content", "key", "reason"),
    [
        ('{"testRetries": "many"}', "testRetries", "valid integer"),
        ('{"sandbox": {"phases": {"build": "sideways"}}}', "sandbox.phases.build", "readonly"),
        ('{"sandbox": {"levls": {}}}', "sandbox.levls", "unknown key (did you mean 'sandbox.levels'?)"),
        ('{"testComand": "npm test"}', "testComand", "unknown key (did you mean 'testCommand'?)"),
        ('{"allowDomains": ["x.test"]}', "allowDomains", "unknown key ('allowDomains' belongs in sandbox.levels.<level>)"),
        ('{"sandbox": {"levels": {"build": {}}}}', "sandbox.levels.build",
         "keys here: readonly, readwrite, network, full; 'build' belongs in models or in sandbox.phases"),
        ('{"timeouts": {"inactivity": 5}}', "timeouts.inactivity",
         "unknown key (keys here: inactivitySeconds, toolSeconds, runSeconds, reviewerSeconds)"),
        ('{"sandbox": {"testCommand": "x"}}', "sandbox.testCommand", "'testCommand' belongs at the top level"),
        ('{"provider": "gpt"}', "provider", "auto"),
        ('{"testRetries": -1}', "testRetries", "greater than or equal to 0"),
    ],
)
def test_invalid_project_config_names_file_key_and_reason(repo, content, key, reason):
    path = write_project(repo, content)
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    error = caught.value
    assert error.file == str(path)
    assert error.key == key
    assert reason in error.reason
    assert error.exit_code == 2


def test_broken_json_reports_line_and_column(repo):
    path = write_project(repo, '{\n  "provider": "pi",\n  oops\n}')
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert caught.value.file == str(path)
    assert "line 3" in str(caught.value)


def test_broken_toml_names_the_user_file(repo):
    path = write_user('provider = "pi\n')
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert caught.value.file == str(path)
    assert "invalid TOML" in caught.value.reason


def test_top_level_must_be_an_object(repo):
    write_project(repo, "[1, 2]")
    with pytest.raises(ConfigError, match="top level must be an object"):
        load_config(repo)


def test_legacy_key_is_ignored_with_a_warning(repo):
    write_project(repo, {"agentForbiddenTools": ["Bash"], "testRetries": 2})
    loaded = load_config(repo)
    assert loaded.config.test_retries == 2
    assert any("agentForbiddenTools" in w and "ignoring" in w for w in loaded.warnings)


def test_invalid_flag_is_reported_as_command_line(repo):
    with pytest.raises(ConfigError) as caught:
        load_config(repo, {"provider": "nope"})
    assert caught.value.file == "command line"


def test_project_config_found_from_a_subdirectory(repo):
    write_project(repo, {"testRetries": 9})
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert load_config(sub).config.test_retries == 9


def test_project_filter_can_drop_values(repo):
    write_project(repo, {"testRetries": 9, "provider": "pi"})

    def drop_provider(path, values):
        kept = {k: v for k, v in values.items() if k != "provider"}
        return kept, [f"{path.name}: provider ignored"]

    loaded = load_config(repo, project_filter=drop_provider)
    assert loaded.config.provider == "auto"
    assert loaded.config.test_retries == 9
    assert loaded.warnings == [".gtdrc.json: provider ignored"]
