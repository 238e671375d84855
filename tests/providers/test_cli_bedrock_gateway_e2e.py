"""Issue 27 for opencode and pi on Amazon Bedrock: the AWS identity stays on the host (cli_cloud_routes.py).

The real opencode and pi run in the real sandbox on an `amazon-bedrock/...` model. The person's own CLI config
points Bedrock at the fake model server (as it would at a VPC endpoint), which speaks Bedrock's Converse API
and checks the authorization as AWS would: a SigV4 signature made with the host's AWS keys (from
~/.aws/credentials), recomputed from the request as received, or the Bedrock API key. A tool call dumps
everything the agent can read, ~/.aws included, and nothing of the credentials goes back to the model.
"""

from __future__ import annotations

import json

import pytest

from agents import require_cli
from fakemodel.cloud import sigv4_valid
from fakemodel.server import say, shell
from gtd.config.schema import Phase
from gtd.providers.registry import _load
from gtd.providers.runner import run_agent
from gtd.sandbox.network.credential_gateway import gateway_url
from provider_support import request_for
from test_cloud_gateway_e2e import ACCESS_KEY, BEDROCK_KEY, SECRET, SESSION_TOKEN, TIMEOUTS, sent_back
from test_credential_gateway_e2e import DUMP, open_session

pytestmark = pytest.mark.e2e
MODEL = "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS_DUMP = DUMP + "; cat ~/.aws/credentials ~/.aws/config; ls -A ~/.aws; echo AWS-DONE"
AWS_VARS = ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CLAUDE_CODE_USE_BEDROCK", "PI_CODING_AGENT_DIR",
            "OPENCODE_CONFIG")


@pytest.fixture(params=["opencode", "pi"])
def bedrock_cli(request, monkeypatch, fake_model, isolated_home):
    """opencode or pi, with ~/.aws holding the host's AWS keys and the person's CLI config sending Bedrock to
    the fake server."""
    cli = request.param
    require_cli(cli, monkeypatch)
    for var in AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    aws = isolated_home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = "
                                     f"{SECRET}\naws_session_token = {SESSION_TOKEN}\n")
    (aws / "config").write_text("[default]\nregion = eu-west-3\n")
    if cli == "opencode":
        own = isolated_home / ".config" / "opencode" / "opencode.json"
        own.parent.mkdir(parents=True)
        own.write_text(json.dumps({"provider": {"amazon-bedrock": {"options": {"endpoint": fake_model.url}}}}))
    else:
        own = isolated_home / ".pi" / "agent" / "models.json"
        own.parent.mkdir(parents=True)
        own.write_text(json.dumps({"providers": {"amazon-bedrock": {"baseUrl": fake_model.url}}}))
    return cli


def run_on_bedrock(cli, repo, home, fake_model):
    provider = _load(cli)()
    provider.models = {"build": MODEL}
    fake_model.script([shell(AWS_DUMP), say("All finished.")])
    session = open_session(repo, provider, home)
    try:
        routes = {r.name: r for r in session.policy.model_routes}
        result = run_agent(provider, request_for(repo, "Look around", Phase.BUILD, model=MODEL), session,
                           timeouts=TIMEOUTS)
    finally:
        session.close()
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    assert routes["bedrock"].upstream == fake_model.url, routes
    invoked = [r for r in fake_model.requests if r.path.endswith("/converse-stream")]
    assert invoked and all(r.path.startswith("/model/") for r in invoked), [r.path for r in fake_model.requests]
    back = sent_back(fake_model)
    assert "AWS-DONE" in back
    # Inside: the placeholder as the Bedrock API key, the gateway as the Bedrock endpoint, no AWS file or key.
    assert "AWS_BEARER_TOKEN_BEDROCK=gtd-placeholder-" in back and "AWS_REGION=eu-west-3" in back
    assert gateway_url("bedrock") in back
    assert "aws_access_key_id" not in back and "AWS_ACCESS_KEY_ID" not in back and "AWS_PROFILE" not in back
    return invoked, back, result


def test_bedrock_is_signed_with_the_hosts_aws_keys(bedrock_cli, uncommitted_repo, fake_model, isolated_home):
    invoked, back, result = run_on_bedrock(bedrock_cli, uncommitted_repo, isolated_home, fake_model)
    for recorded in invoked:  # signed on the host, for the path as the CLI sent it (its model id's ":" as %3A)
        assert "%3A0/converse-stream" in recorded.raw_path
        ok, why = sigv4_valid("POST", recorded.raw_path, recorded.headers, recorded.raw, access_key=ACCESS_KEY,
                              secret=SECRET, region="eu-west-3")
        assert ok, (why, recorded.raw_path)
        assert recorded.headers.get("x-amz-security-token") == SESSION_TOKEN
        assert "gtd-placeholder-" not in json.dumps(recorded.headers)
    for secret in (SECRET, SESSION_TOKEN, ACCESS_KEY):
        assert secret not in back
    assert SECRET not in result.stderr + json.dumps([e.raw for e in result.events if e.raw], default=str)


def test_bedrock_with_an_api_key(bedrock_cli, uncommitted_repo, fake_model, isolated_home, monkeypatch):
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", BEDROCK_KEY)
    invoked, back, _result = run_on_bedrock(bedrock_cli, uncommitted_repo, isolated_home, fake_model)
    assert all(r.headers.get("authorization") == f"Bearer {BEDROCK_KEY}" for r in invoked)
    assert BEDROCK_KEY not in back and SECRET not in back
