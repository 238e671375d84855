"""`gtd doctor`'s "model credentials" row (issue 27): what stays on the host behind the credential gateway,
and what still reaches the agent CLI (Bedrock/Vertex, a key for a provider without a route), with why."""

from __future__ import annotations

import json

import pytest

from agents import require_cli
from support import explain, run_gtd


def credentials_row(repo, provider: str, env: dict, **settings) -> dict:
    from gtd import paths

    paths.user_config_dir().mkdir(parents=True, exist_ok=True)
    (paths.user_config_dir() / "config.json").write_text(json.dumps({"provider": provider, **settings}))
    result = run_gtd("doctor", "--json", cwd=repo, env=env)
    rows = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert "model credentials" in rows, explain(result)
    return rows["model credentials"]


def test_an_api_key_is_behind_the_gateway(repo, isolated_home, monkeypatch):
    require_cli("pi", monkeypatch)
    row = credentials_row(repo, "pi", {"ANTHROPIC_API_KEY": "sk-one", "OPENAI_API_KEY": "sk-two"})
    assert row["ok"] and "placeholders only" in row["detail"]
    assert "anthropic -> https://api.anthropic.com: ANTHROPIC_API_KEY" in row["detail"]
    assert "openai -> https://api.openai.com/v1: OPENAI_API_KEY" in row["detail"]
    assert "sk-one" not in json.dumps(row)


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_mistral_and_deepseek_keys_are_behind_the_gateway(cli, repo, isolated_home, monkeypatch):
    """Their keys are the CLI's own even with no model of theirs chosen: routed to each CLI's default endpoint."""
    require_cli(cli, monkeypatch)
    row = credentials_row(repo, cli, {"ANTHROPIC_API_KEY": "sk-one", "MISTRAL_API_KEY": "m-key",
                                      "DEEPSEEK_API_KEY": "d-key"})
    assert row["ok"] and "placeholders only" in row["detail"] and "no gateway route" not in row["detail"]
    mistral = "https://api.mistral.ai/v1" if cli == "opencode" else "https://api.mistral.ai"
    assert f"mistral -> {mistral}: MISTRAL_API_KEY" in row["detail"]
    assert "deepseek -> https://api.deepseek.com: DEEPSEEK_API_KEY" in row["detail"]
    assert "m-key" not in json.dumps(row) and "d-key" not in json.dumps(row)


def test_bedrock_without_host_credentials_says_so(repo, isolated_home, monkeypatch):
    require_cli("claude", monkeypatch)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(var, raising=False)
    row = credentials_row(repo, "claude", {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1"})
    assert not row["ok"] and "Bedrock credentials, if any (not signed on the host: no AWS credentials" in row["detail"]
    assert row["fix"].startswith("see docs/credential-gateway.md")


@pytest.mark.parametrize("cli", ["claude", "opencode", "pi"])
def test_bedrock_with_host_credentials_is_signed_on_the_host(cli, repo, isolated_home, monkeypatch):
    require_cli(cli, monkeypatch)
    for var in ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(var, raising=False)
    env = {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIAX", "AWS_SECRET_ACCESS_KEY": "aws-secret-x"}
    if cli == "claude":
        row = credentials_row(repo, cli, {**env, "CLAUDE_CODE_USE_BEDROCK": "1"})
    else:
        row = credentials_row(repo, cli, env, models={"build": "amazon-bedrock/anthropic.claude-sonnet-4"})
    assert row["ok"], row
    assert ("bedrock -> https://bedrock-runtime.eu-west-1.amazonaws.com: AWS credentials (SigV4, signed on the host)"
            in row["detail"])
    assert "aws-secret-x" not in json.dumps(row)


def test_pi_on_vertex_says_its_credentials_reach_the_cli(repo, isolated_home, monkeypatch):
    require_cli("pi", monkeypatch)
    row = credentials_row(repo, "pi", {"GOOGLE_CLOUD_PROJECT": "proj-1"}, models={"build": "google-vertex/gemini-2.5-pro"})
    assert not row["ok"]
    assert "Vertex credentials, if any (not signed on the host: opencode's and pi's Vertex SDKs mint" in row["detail"]


def claude_with_a_subscription_login(home, monkeypatch) -> None:
    require_cli("claude", monkeypatch)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    login = home / ".claude" / ".credentials.json"
    login.parent.mkdir(parents=True)
    login.write_text(json.dumps({"claudeAiOauth": {"accessToken": "sk-ant-oat01-x", "expiresAt": 9999999999999}}))


def test_a_subscription_login_is_a_placeholder_inside(repo, isolated_home, monkeypatch):
    claude_with_a_subscription_login(isolated_home, monkeypatch)
    row = credentials_row(repo, "claude", {})
    assert row["ok"] and "claude's subscription login (a placeholder login file inside)" in row["detail"]


def test_a_login_bound_inside_by_choice_is_named_with_the_way_back(repo, isolated_home, monkeypatch):
    claude_with_a_subscription_login(isolated_home, monkeypatch)
    row = credentials_row(repo, "claude", {}, sandbox={"claudeLogin": "inside"})
    assert not row["ok"] and "sandbox.claudeLogin: inside" in row["detail"] and "readable inside" in row["detail"]
    assert "claudeLogin back to" in row["fix"] and "sk-ant-oat01-x" not in json.dumps(row)


def test_on_macos_the_row_says_where_the_gateway_listens_and_that_the_login_comes_from_the_keychain(
        isolated_home, monkeypatch):
    """In-process, sys.platform "darwin" (no Mac here): the seatbelt backend serves the gateway on the host's
    loopback, and claude's login may be the Keychain's."""
    import sys

    from gtd.providers.base import SandboxNeeds
    from gtd.providers.claude_keychain import KeychainLogin
    from gtd.providers.credential_report import credential_row
    from gtd.providers.model_routes import anthropic_route

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(sys, "platform", "darwin")
    login = KeychainLogin(isolated_home / ".credentials.json", "Claude Code-credentials", "dev")
    row = credential_row(SandboxNeeds(model_routes=[anthropic_route(login=login)]))
    assert row["ok"], row
    assert ("anthropic -> https://api.anthropic.com: claude's subscription login from the macOS Keychain "
            "(a placeholder login file inside)") in row["detail"]
    assert "host's loopback at a port of its own" in row["detail"] and "this session's placeholder" in row["detail"]
    assert not credential_row(SandboxNeeds(model_routes=[anthropic_route(login=login)]), sandboxed=False)["ok"]
