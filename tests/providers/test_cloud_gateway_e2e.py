"""Issue 27 for claude on Amazon Bedrock and Google Vertex AI: the cloud identity stays on the host.

The real claude runs in the real sandbox against the fake model server standing in for Bedrock or Vertex
(tests/fakemodel/cloud.py). The server checks the authorization as the cloud would: a SigV4 signature made
with the host's AWS secret, recomputed from the request as received; a Bedrock API key; a Vertex access
token minted on the host from a service account's key (the token endpoint is the fake server too). A tool
call dumps everything the agent can read, and the test checks that nothing of the cloud credentials went
back to the model.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from fakemodel.cloud import sigv4_valid
from fakemodel.server import say, shell
from gtd.config.schema import Phase
from gtd.providers.registry import _load
from gtd.providers.runner import run_agent
from provider_support import request_for
from test_credential_gateway_e2e import DUMP, open_session

pytestmark = pytest.mark.e2e
TIMEOUTS = SimpleNamespace(inactivity_seconds=90, run_seconds=180)
ACCESS_KEY = "AKIAGTDTEST" + os.urandom(5).hex().upper()
SECRET = "aws-secret-" + os.urandom(16).hex()  # never printed by a passing test
SESSION_TOKEN = "aws-session-" + os.urandom(16).hex()
BEDROCK_KEY = "ABSK" + os.urandom(16).hex()


@pytest.fixture
def cloud_claude(claude_agent, monkeypatch):
    """The real claude, with no Anthropic key: the cloud switches below decide where it goes."""
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK",
                "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(var, raising=False)
    return claude_agent


def run_claude(repo, home, fake_model, dump: str = DUMP):
    provider = _load("claude")()
    fake_model.script([shell(dump), say("All finished.")])
    session = open_session(repo, provider, home)
    try:
        names = [r.name for r in session.policy.model_routes]
        result = run_agent(provider, request_for(repo, "Look around", Phase.BUILD), session, timeouts=TIMEOUTS)
    finally:
        session.close()
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    return result, names


def cloud_requests(fake_model):
    return [r for r in fake_model.requests if r.api == "anthropic"]


def sent_back(fake_model) -> str:
    text = json.dumps([r.body for r in fake_model.main_requests()])
    assert "DUMP-DONE" in text and "gtd-placeholder-" in text
    return text


def test_claude_on_bedrock_is_signed_on_the_host(cloud_claude, uncommitted_repo, fake_model, isolated_home,
                                                monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake_model.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    result, routes = run_claude(uncommitted_repo, isolated_home, fake_model)
    assert routes == ["bedrock"]
    invoked = cloud_requests(fake_model)
    assert invoked and all("/model/" in r.path for r in invoked), [r.path for r in invoked]
    # Every model request carries a valid signature, made on the host with the real secret ...
    for recorded in invoked:
        ok, why = sigv4_valid("POST", recorded.raw_path, recorded.headers, recorded.raw, access_key=ACCESS_KEY,
                              secret=SECRET, region="eu-west-3")
        assert ok, (why, recorded.raw_path)
        assert recorded.headers.get("x-amz-security-token") == SESSION_TOKEN
        assert "gtd-placeholder-" not in json.dumps(recorded.headers)
    # ... and nothing the agent could read held any of it.
    back = sent_back(fake_model)
    for secret in (SECRET, SESSION_TOKEN, ACCESS_KEY):
        assert secret not in back
    assert "CLAUDE_CODE_USE_BEDROCK=1" in back and "ANTHROPIC_BEDROCK_BASE_URL=http://127.0.0.1:" in back
    assert SECRET not in result.stderr + json.dumps([e.raw for e in result.events if e.raw], default=str)


def test_claude_on_bedrock_with_an_api_key(cloud_claude, uncommitted_repo, fake_model, isolated_home, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake_model.url)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", BEDROCK_KEY)
    run_claude(uncommitted_repo, isolated_home, fake_model)
    invoked = cloud_requests(fake_model)
    assert invoked and all(r.headers.get("authorization") == f"Bearer {BEDROCK_KEY}" for r in invoked)
    assert BEDROCK_KEY not in sent_back(fake_model)


def service_account(path, token_uri: str) -> dict:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    data = {"type": "service_account", "project_id": "gtd-test", "private_key_id": os.urandom(8).hex(),
            "private_key": pem, "client_email": "agent@gtd-test.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": token_uri}
    path.write_text(json.dumps(data))
    return data


def test_claude_on_vertex_gets_tokens_minted_on_the_host(cloud_claude, uncommitted_repo, fake_model, isolated_home,
                                                         tmp_path, monkeypatch):
    pytest.importorskip("google.auth", reason="the cloud extra (scripts/setup installs it)")
    account_file = isolated_home / "sa.json"
    account = service_account(account_file, fake_model.url + "/token")
    monkeypatch.setenv("CLAUDE_CODE_USE_VERTEX", "1")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "gtd-test")
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", fake_model.url + "/v1")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(account_file))
    run_claude(uncommitted_repo, isolated_home, fake_model, dump=DUMP + f"; cat {account_file}; echo FILE-DONE")
    invoked = cloud_requests(fake_model)
    assert invoked and all(":streamRawPredict" in r.path or ":rawPredict" in r.path for r in invoked)
    assert "/locations/europe-west1/" in invoked[0].path
    # The token was minted on the host (the service account's JWT went to the token endpoint) ...
    assert fake_model.token_requests and "jwt-bearer" in fake_model.token_requests[0]
    assert all(r.headers.get("authorization") == f"Bearer {fake_model.minted_token}" for r in invoked)
    # ... and neither the key file nor the token was readable inside.
    back = sent_back(fake_model)
    assert "FILE-DONE" in back
    assert account["private_key_id"] not in back and "PRIVATE KEY" not in back
    assert fake_model.minted_token not in back
    assert f"GOOGLE_APPLICATION_CREDENTIALS={account_file}" not in back
