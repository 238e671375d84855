"""Issue 27 for the built-in providers of opencode and pi beyond Anthropic and OpenAI (Mistral, DeepSeek):
with a model of theirs chosen and the real key in the host's environment, the real CLI in the real sandbox
sends its requests to gtd's gateway, the model API gets the real key in `Authorization`, and everything
the agent can read holds only a placeholder.

The fake model server stands in for the provider's API. Its default endpoint (model_routes.BUILT_IN, per CLI)
is an https host the tests cannot reach, so each test swaps that entry's scheme and host for the fake
server's and keeps its path: the request path the server records is then the one the real API would get."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from agents import require_cli
from fakemodel.server import say, shell
from gtd.config.schema import Level, Phase
from gtd.providers import model_routes
from gtd.providers.opencode import OpencodeProvider
from gtd.providers.pi import PiProvider
from gtd.providers.runner import run_agent
from provider_support import request_for

pytestmark = [pytest.mark.e2e, pytest.mark.bwrap]
TIMEOUTS = SimpleNamespace(inactivity_seconds=90, run_seconds=180, tool_seconds=60)
REAL = "sk-real-" + os.urandom(12).hex()  # never printed by a passing test
DUMP = ("env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; echo; done 2>/dev/null; "
        "cat \"$XDG_CONFIG_HOME\"/opencode/* \"$PI_CODING_AGENT_DIR\"/*.json 2>/dev/null; echo DUMP-DONE")
# A model each CLI's catalogue has, the key variable, and the path the real API is asked on.
MODELS = {"mistral": ("mistral/mistral-medium-latest", "MISTRAL_API_KEY", "/v1/chat/completions"),
          "deepseek": ("deepseek/deepseek-v4-pro", "DEEPSEEK_API_KEY", "/chat/completions")}


@pytest.fixture
def no_other_keys(isolated_home, monkeypatch):
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_CONFIG",
                "PI_CODING_AGENT_DIR", *(key for _m, key, _p in MODELS.values())):
        monkeypatch.delenv(var, raising=False)


def at_fake_server(upstream: str, server) -> str:
    """The default endpoint with the fake server's scheme and host, its path kept."""
    return server.url + urlsplit(upstream).path.rstrip("/")


@pytest.mark.parametrize("provider_id", sorted(MODELS))
@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_a_built_in_provider_gets_the_real_key_through_the_gateway(cli, provider_id, no_other_keys, fake_model,
                                                                   uncommitted_repo, sandbox_session, monkeypatch):
    require_cli(cli, monkeypatch)
    model, key_var, api_path = MODELS[provider_id]
    upstream, secrets = model_routes.BUILT_IN[provider_id][cli]
    assert key_var in secrets and upstream.startswith("https://")
    monkeypatch.setitem(model_routes.BUILT_IN[provider_id], cli, (at_fake_server(upstream, fake_model), secrets))
    monkeypatch.setenv(key_var, REAL)
    provider = OpencodeProvider() if cli == "opencode" else PiProvider()
    provider.models = {"build": model}
    needs = provider.sandbox_needs(uncommitted_repo)
    assert provider_id in [r.name for r in needs.model_routes]
    session = sandbox_session(uncommitted_repo, level=Level.READWRITE, phase=Phase.BUILD, needs=needs)
    fake_model.script([shell(DUMP), say("All finished.")])
    result = run_agent(provider, request_for(uncommitted_repo, "Look around", Phase.BUILD, model=model), session,
                       timeouts=TIMEOUTS)
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    main = fake_model.main_requests()
    assert len(main) >= 2
    for recorded in main:  # the provider's API path, the real key, in the auth header
        assert recorded.path == api_path, recorded.path
        assert recorded.headers.get("authorization") == f"Bearer {REAL}", recorded.path
    sent_back = json.dumps([r.body for r in main])
    assert "DUMP-DONE" in sent_back and f"{key_var}=gtd-placeholder-" in sent_back
    assert REAL not in sent_back and REAL[8:] not in sent_back
    assert REAL not in json.dumps([e.raw for e in result.events if e.raw], default=str) + result.stderr


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_a_built_in_provider_moved_in_the_persons_own_config_keeps_its_key_outside(cli, no_other_keys, fake_model,
                                                                                   uncommitted_repo, isolated_home,
                                                                                   sandbox_session, monkeypatch):
    """Mistral pointed at another endpoint (a proxy, here the fake server) in the person's own opencode or pi
    config, with no key there: the key the CLI reads (MISTRAL_API_KEY) still goes in on the host only."""
    require_cli(cli, monkeypatch)
    monkeypatch.setenv("MISTRAL_API_KEY", REAL)
    if cli == "opencode":
        path, own = isolated_home / ".config/opencode/opencode.json", {
            "model": "mistral/mistral-medium-latest",
            "provider": {"mistral": {"options": {"baseURL": fake_model.url + "/v1"}}}}
    else:
        path, own = isolated_home / ".pi/agent/models.json", {"providers": {"mistral": {"baseUrl": fake_model.url}}}
        (isolated_home / ".pi/agent").mkdir(parents=True)
        (isolated_home / ".pi/agent/settings.json").write_text(json.dumps(
            {"defaultProvider": "mistral", "defaultModel": "mistral-medium-latest"}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(own))
    provider = OpencodeProvider() if cli == "opencode" else PiProvider()
    needs = provider.sandbox_needs(uncommitted_repo)
    route = next(r for r in needs.model_routes if r.name == "mistral")
    assert route.secrets == ("MISTRAL_API_KEY",) and route.upstream.startswith(fake_model.url)
    session = sandbox_session(uncommitted_repo, level=Level.READWRITE, phase=Phase.BUILD, needs=needs)
    fake_model.script([shell(DUMP), say("All finished.")])
    result = run_agent(provider, request_for(uncommitted_repo, "Look around", Phase.BUILD), session, timeouts=TIMEOUTS)
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    main = fake_model.main_requests()
    assert main and {r.headers.get("authorization") for r in main} == {f"Bearer {REAL}"}
    assert {r.path for r in main} == {"/v1/chat/completions"}
    sent_back = json.dumps([r.body for r in main])
    assert "DUMP-DONE" in sent_back and "MISTRAL_API_KEY=gtd-placeholder-" in sent_back and REAL not in sent_back


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_gtd_sandbox_run_env_holds_placeholders_for_mistral_and_deepseek(cli, no_other_keys, repo, isolated_home,
                                                                         monkeypatch):
    """`gtd sandbox run -- env`: both keys set, a Mistral model chosen, DeepSeek not: neither key inside, each a
    placeholder of its own; `gtd sandbox explain` names both routes with the CLI's own default endpoint."""
    from gtd import paths
    from support import explain, run_gtd

    require_cli(cli, monkeypatch)
    monkeypatch.setenv("MISTRAL_API_KEY", REAL)
    monkeypatch.setenv("DEEPSEEK_API_KEY", REAL + "-deepseek")
    paths.user_config_dir().mkdir(parents=True, exist_ok=True)
    (paths.user_config_dir() / "config.json").write_text(json.dumps(
        {"provider": cli, "models": {"build": "mistral/mistral-medium-latest"}}))
    result = run_gtd("sandbox", "run", "--level", "readwrite", "--", "env", cwd=repo)
    assert result.returncode == 0, explain(result)
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert REAL not in result.stdout + result.stderr
    assert env["MISTRAL_API_KEY"].startswith("gtd-placeholder-")
    assert env["DEEPSEEK_API_KEY"].startswith("gtd-placeholder-") and env["DEEPSEEK_API_KEY"] != env["MISTRAL_API_KEY"]
    explained = run_gtd("sandbox", "explain", "--json", cwd=repo)
    routes = {r["route"]: r for r in json.loads(explained.stdout)["modelGateway"]}
    mistral = "https://api.mistral.ai/v1" if cli == "opencode" else "https://api.mistral.ai"
    assert routes["mistral"]["upstream"] == mistral and routes["mistral"]["credentials"] == ["MISTRAL_API_KEY"]
    assert routes["deepseek"]["upstream"] == "https://api.deepseek.com", explain(explained)


# Every other built-in route the fake server can answer (not Gemini's wire format, nor the Responses API that
# opencode's xAI package speaks): a model of the provider in that CLI's catalogue, and the path the real API
# is asked on (the upstream's path + the SDK's).
OTHERS = {
    "opencode": {"openrouter": ("openrouter/qwen/qwen3-coder", "/api/v1/chat/completions"),
                 "groq": ("groq/llama-3.3-70b-versatile", "/openai/v1/chat/completions"),
                 "cerebras": ("cerebras/gpt-oss-120b", "/v1/chat/completions"),
                 "huggingface": ("huggingface/deepseek-ai/DeepSeek-V3", "/v1/chat/completions"),
                 "moonshotai": ("moonshotai/kimi-k2.6", "/v1/chat/completions"),
                 "minimax": ("minimax/MiniMax-M2.5", "/anthropic/v1/messages"),
                 "fireworks-ai": ("fireworks-ai/accounts/fireworks/models/glm-5p3", "/inference/v1/chat/completions"),
                 "togetherai": ("togetherai/deepseek-ai/DeepSeek-V4-Pro", "/v1/chat/completions")},
    "pi": {"openrouter": ("openrouter/qwen/qwen3-coder", "/api/v1/chat/completions"),
           "groq": ("groq/llama-3.3-70b-versatile", "/openai/v1/chat/completions"),
           "xai": ("xai/grok-4", "/v1/chat/completions"),
           "cerebras": ("cerebras/gpt-oss-120b", "/v1/chat/completions"),
           "huggingface": ("huggingface/MiniMaxAI/MiniMax-M2.1", "/v1/chat/completions"),
           "moonshotai": ("moonshotai/kimi-k2-0905-preview", "/v1/chat/completions"),
           "minimax": ("minimax/MiniMax-M2.7", "/anthropic/v1/messages"),
           "fireworks": ("fireworks/accounts/fireworks/models/glm-4p5", "/inference/v1/messages")},
}


@pytest.mark.parametrize("cli,provider_id", [(c, p) for c in sorted(OTHERS) for p in sorted(OTHERS[c])])
def test_every_other_built_in_route_reaches_its_api_with_the_real_key(cli, provider_id, no_other_keys, fake_model,
                                                                      uncommitted_repo, sandbox_session, monkeypatch):
    require_cli(cli, monkeypatch)
    model, api_path = OTHERS[cli][provider_id]
    upstream, secrets = model_routes.BUILT_IN[provider_id][cli]
    monkeypatch.setitem(model_routes.BUILT_IN[provider_id], cli, (at_fake_server(upstream, fake_model), secrets))
    monkeypatch.setenv(secrets[0], REAL)
    provider = OpencodeProvider() if cli == "opencode" else PiProvider()
    provider.models = {"build": model}
    session = sandbox_session(uncommitted_repo, level=Level.READWRITE, phase=Phase.BUILD,
                              needs=provider.sandbox_needs(uncommitted_repo))
    fake_model.script([say("All finished.")])
    result = run_agent(provider, request_for(uncommitted_repo, "Say hi", Phase.BUILD, model=model), session,
                       timeouts=TIMEOUTS)
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    main = fake_model.main_requests()
    assert main and {r.path for r in main} == {api_path}
    assert all(REAL in (r.headers.get("authorization") or r.headers.get("x-api-key") or "") for r in main)
