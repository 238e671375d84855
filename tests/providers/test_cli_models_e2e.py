"""A model provider from the person's own opencode/pi config, end to end through the real sandbox: a
"local model server" (the fake model server) on the HOST's loopback, named only in ~/.config/opencode
or ~/.pi/agent (no ANTHROPIC_BASE_URL/OPENAI_BASE_URL), is reached by the real CLI and by curl inside
the sandbox at readonly without a prompt, and `gtd sandbox explain` names the file it came from."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents import require_cli
from fakemodel.server import say, shell
from gtd.config.schema import Level, Phase
from gtd.providers.events import EventKind
from gtd.providers.opencode import OpencodeProvider
from gtd.providers.pi import PiProvider
from gtd.providers.runner import run_agent
from provider_support import request_for
from support import run_gtd

pytestmark = [pytest.mark.e2e, pytest.mark.bwrap]
TIMEOUTS = SimpleNamespace(inactivity_seconds=90, run_seconds=180, tool_seconds=60)


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def local_model(fake_model, isolated_home, monkeypatch):
    """The fake server as the person's local model (like Ollama at localhost:11434), in their own CLI config."""
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_CONFIG",
                "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(var, raising=False)
    url = f"http://localhost:{fake_model.port}/v1"
    _write(isolated_home / ".config/opencode/opencode.json", {
        "model": "ollama/llama3",
        "provider": {"ollama": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": url, "apiKey": "ollama"},
                                "models": {"llama3": {"name": "llama3", "tool_call": True}}}}})
    _write(isolated_home / ".pi/agent/settings.json", {"defaultProvider": "ollama", "defaultModel": "llama3"})
    _write(isolated_home / ".pi/agent/models.json", {"providers": {"ollama": {
        "baseUrl": url, "api": "openai-completions", "apiKey": "ollama",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False}, "models": [{"id": "llama3"}]}}})
    return fake_model


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_the_real_cli_reaches_a_local_model_named_in_its_own_config(cli, local_model, uncommitted_repo,
                                                                    sandbox_session, monkeypatch):
    require_cli(cli, monkeypatch)
    provider = OpencodeProvider() if cli == "opencode" else PiProvider()
    needs = provider.sandbox_needs(uncommitted_repo)
    rule = f"localhost:{local_model.port}"
    assert rule in needs.model_hosts and "provider ollama" in needs.model_host_origins[rule]
    session = sandbox_session(uncommitted_repo, level=Level.READONLY, phase=Phase.PLAN, needs=needs)
    local_model.script([shell("echo planned > TODO.md"), say("Plan written.")])
    request = request_for(uncommitted_repo, "Write the plan", Phase.PLAN)
    result = run_agent(provider, request, session, timeouts=TIMEOUTS)
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    assert (uncommitted_repo / "TODO.md").read_text() == "planned\n"
    assert any(e.kind == EventKind.TOOL_CALL for e in result.events)
    assert local_model.main_requests()[0].body.get("model") == "llama3"  # the person's default model
    assert session.violations == []  # no refusal, no prompt
    # Any client inside reaches it too (the port is forwarded to the host's loopback), by both names.
    for host in ("localhost", "127.0.0.1"):
        curl = session.run(["curl", "-sS", "--max-time", "10", f"http://{host}:{local_model.port}/v1/models"],
                           cwd=uncommitted_repo, timeout=30)
        assert b"fake-model" in curl.stdout, curl.stderr


def test_explain_names_the_config_file_a_model_host_came_from(local_model, uncommitted_repo, monkeypatch):
    require_cli("opencode", monkeypatch)
    (uncommitted_repo / ".gtdrc.json").write_text(json.dumps({"provider": "opencode",
                                                  "models": {"build": "openrouter/anthropic/claude-sonnet-4"}}))
    untrusted = run_gtd("sandbox", "explain", "--phase", "plan", cwd=uncommitted_repo)
    assert "openrouter.ai" not in untrusted.stdout  # a project file's model opens its host once trusted
    assert "models.build: openrouter/anthropic/claude-sonnet-4" in untrusted.stderr, untrusted.stderr
    assert run_gtd("trust", cwd=uncommitted_repo).returncode == 0
    result = run_gtd("sandbox", "explain", "--phase", "plan", cwd=uncommitted_repo)
    assert result.returncode == 0, result.stderr
    port = local_model.port
    assert (f"  localhost:{port} (from opencode config ~/.config/opencode/opencode.json: provider ollama "
            "options.baseURL)\n") in result.stdout
    assert ("  openrouter.ai:443 (from gtd config models.build = openrouter/anthropic/claude-sonnet-4: opencode's "
            "openrouter provider)\n") in result.stdout
    assert f"host loopback ports (127.0.0.1:PORT inside reaches the host's): {port}" in result.stdout
    data = json.loads(run_gtd("sandbox", "explain", "--phase", "plan", "--json", cwd=uncommitted_repo).stdout)
    assert data["modelHostOrigins"][f"localhost:{port}"].startswith("opencode config ~/.config/opencode/opencode.json")
    why = run_gtd("sandbox", "why", f"localhost:{port}", "--phase", "plan", cwd=uncommitted_repo)
    assert "forwarded to the same port on the host's loopback (the model API from opencode config " \
           "~/.config/opencode/opencode.json: provider ollama options.baseURL)" in why.stdout, why.stdout + why.stderr
