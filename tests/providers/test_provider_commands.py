"""How each provider builds argv/env and what it asks of the sandbox (no CLI needed)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from gtd.config.schema import GtdConfig, Phase
from gtd.errors import GtdError
from gtd.providers.claude import ClaudeProvider
from gtd.providers.endpoints import host_port
from gtd.providers.opencode import OpencodeProvider
from gtd.providers.pi import PiProvider
from gtd.providers.registry import get_provider, provider_report
from provider_support import request_for


@pytest.fixture(autouse=True)
def endpoints(monkeypatch):
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_host_port():
    assert host_port("http://127.0.0.1:4100") == "127.0.0.1:4100"
    assert host_port("https://api.anthropic.com") == "api.anthropic.com:443"
    assert host_port("http://gateway.local/v1") == "gateway.local:80"
    assert host_port("http://[::1]:9000/v1") == "[::1]:9000"


def test_model_hosts_follow_the_base_url_env(monkeypatch):
    assert ClaudeProvider().sandbox_needs().model_hosts == ["api.anthropic.com:443"]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:4100")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:4200/v1")
    assert ClaudeProvider().sandbox_needs().model_hosts == ["127.0.0.1:4100"]
    assert OpencodeProvider().sandbox_needs().model_hosts == ["127.0.0.1:4100", "127.0.0.1:4200"]
    assert PiProvider().sandbox_needs().model_hosts == ["127.0.0.1:4100", "127.0.0.1:4200"]


@pytest.mark.parametrize("cls", [ClaudeProvider, OpencodeProvider, PiProvider])
def test_needs_pass_credentials_and_protect_config(cls):
    needs = cls().sandbox_needs()
    assert "ANTHROPIC_API_KEY" in needs.env_passthrough
    for protected in needs.protected_paths:
        assert not any(protected == w for w in needs.writable_dirs)


def test_claude_build_phase_argv(tmp_path):
    provider = ClaudeProvider(config_dir=tmp_path / "claude")
    spec = provider.command(request_for(tmp_path, "the prompt", Phase.BUILD, model="sonnet", system_prompt="SYS",
                                        resume_session="abc"))
    argv = spec.argv
    assert argv[1:5] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--permission-mode") + 1] == "bypassPermissions"
    assert "--disallowedTools=AskUserQuestion,EnterPlanMode,ExitPlanMode" in argv
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert argv[argv.index("--append-system-prompt") + 1] == "SYS"
    assert argv[argv.index("--resume") + 1] == "abc"
    assert "the prompt" not in argv and spec.stdin_data == b"the prompt"
    assert spec.env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "claude") and spec.env["IS_SANDBOX"] == "1"
    settings = json.loads((tmp_path / "claude" / "settings.json").read_text())
    assert settings["disableAllHooks"] is True
    assert set(settings["permissions"]["deny"]) == {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode"}


def test_claude_plan_phase_allows_edits_only_to_its_file(tmp_path):
    spec = ClaudeProvider(config_dir=tmp_path / "c").command(request_for(tmp_path, "p", Phase.PLAN, editable_paths=["TODO.md"]))
    argv = spec.argv
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    allowed = next(a for a in argv if a.startswith("--allowedTools=")).split("=", 1)[1].split(",")
    assert "Edit(./TODO.md)" in allowed and "Write(./TODO.md)" in allowed and "Bash" in allowed
    assert not {"Edit", "Write", "NotebookEdit", "AskUserQuestion"} & set(allowed)


def test_claude_rewrites_a_planted_mcp_config_each_run(tmp_path):
    provider = ClaudeProvider(config_dir=tmp_path / "c")
    provider.command(request_for(tmp_path))
    planted = tmp_path / "c" / ".claude.json"
    planted.write_text(json.dumps({"mcpServers": {"evil": {"command": "sh"}}}))
    provider.command(request_for(tmp_path))
    assert "mcpServers" not in json.loads(planted.read_text())


def test_opencode_config_denies_interactive_tools_and_limits_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    provider = OpencodeProvider(home=tmp_path / "oc")
    spec = provider.command(request_for(tmp_path, "the prompt", Phase.PLAN, model="gtd-openai/m1", system_prompt="SYS",
                                        editable_paths=["TODO.md"]))
    config = json.loads(spec.env["OPENCODE_CONFIG_CONTENT"])
    permission = config["agent"]["gtd"]["permission"]
    assert {permission[t] for t in ("question", "plan_enter", "plan_exit")} == {"deny"}
    assert permission["edit"]["*"] == "deny" and permission["edit"]["TODO.md"] == "allow"
    assert config["agent"]["gtd"]["prompt"] == "SYS"
    assert config["provider"]["gtd-openai"]["options"]["baseURL"] == "http://127.0.0.1:9/v1"
    assert "m1" in config["provider"]["gtd-openai"]["models"]
    assert spec.argv[-2:] == ["--", "the prompt"] and spec.stdin_data is None
    assert spec.env["XDG_CONFIG_HOME"] == str(tmp_path / "oc" / "config")
    assert not os.path.lexists(tmp_path / ".opencode")  # nothing is made in the repository (issue 24)


def test_opencode_build_phase_allows_edits(tmp_path):
    spec = OpencodeProvider(home=tmp_path / "oc").command(request_for(tmp_path))
    permission = json.loads(spec.env["OPENCODE_CONFIG_CONTENT"])["permission"]
    assert permission["*"] == "allow" and "edit" not in permission


def test_pi_argv_and_models(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:7/v1")
    provider = PiProvider(home=tmp_path / "pi")
    spec = provider.command(request_for(tmp_path, "the prompt", model="anthropic/fake", system_prompt="SYS",
                                        resume_session="0199"))
    argv = spec.argv
    assert argv[argv.index("--tools") + 1] == "read,bash,edit,write"
    assert argv[argv.index("--mode") + 1] == "json" and "-p" in argv
    assert argv[argv.index("--session") + 1] == "0199"
    assert spec.stdin_data == b"the prompt" and spec.env["PI_CODING_AGENT_DIR"] == str(tmp_path / "pi")
    models = json.loads((tmp_path / "pi" / "models.json").read_text())
    assert models["providers"]["anthropic"]["baseUrl"] == "http://127.0.0.1:7"
    assert models["providers"]["anthropic"]["models"] == [{"id": "fake"}]


def _fake_cli(bin_dir, name, version):
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\necho '{version} ({name})'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_auto_looks_up_each_cli_by_its_providers_own_executable():
    from gtd.providers.registry import AUTO_ORDER, EXECUTABLES, _load

    assert set(EXECUTABLES) == set(AUTO_ORDER)
    assert {name: _load(name).executable for name in AUTO_ORDER} == EXECUTABLES


def test_auto_picks_the_first_installed_and_report_lists_all(tmp_path, monkeypatch):
    _fake_cli(tmp_path / "bin", "pi", "0.73.1")
    _fake_cli(tmp_path / "bin", "opencode", "1.18.33")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin")
    assert get_provider("auto", GtdConfig()).name == "opencode"
    report = {r["name"]: r for r in provider_report()}
    assert report["claude"]["installed"] is False and "install" in report["claude"]["fix"]
    assert report["opencode"]["version"] == "1.18.33" and report["pi"]["path"] == str(tmp_path / "bin" / "pi")


def test_report_shows_the_cli_whose_version_it_ran_not_one_from_the_repository(tmp_path, monkeypatch):
    # An activated project venv (node_modules/.bin, direnv's PATH_add) is first on PATH: its `pi` is the
    # agent's to write, so gtd runs the one further on for --version; the report named the repository's
    # beside that version.
    repo = tmp_path / "repo"
    (repo / "node_modules").mkdir(parents=True)
    _fake_cli(repo / "node_modules" / ".bin", "pi", "6.6.6")
    _fake_cli(tmp_path / "bin", "pi", "0.73.1")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", os.pathsep.join([str(repo / "node_modules" / ".bin"), str(tmp_path / "bin"), "/usr/bin:/bin"]))
    pi = {r["name"]: r for r in provider_report()}["pi"]
    assert (pi["path"], pi["version"], pi["fix"]) == (str(tmp_path / "bin" / "pi"), "0.73.1", "")
    monkeypatch.setenv("PATH", os.pathsep.join([str(repo / "node_modules" / ".bin"), "/usr/bin:/bin"]))
    pi = {r["name"]: r for r in provider_report()}["pi"]
    assert (pi["path"], pi["version"]) == (str(repo / "node_modules" / ".bin" / "pi"), None)
    assert "gtd never runs it on the host" in pi["fix"], pi


def test_named_provider_not_installed_is_an_error_not_a_switch(tmp_path, monkeypatch):
    _fake_cli(tmp_path / "bin", "pi", "0.73.1")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(GtdError, match="'claude'.*not on PATH"):
        get_provider("claude", GtdConfig())
