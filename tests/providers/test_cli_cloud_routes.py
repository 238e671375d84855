"""opencode's and pi's Bedrock route (providers/cli_cloud_routes.py): where it goes, what signs, and what of the
person's own Bedrock entry the config gtd writes keeps (never a credential or their endpoint)."""

from __future__ import annotations

import json

import pytest

from gtd.config.schema import Phase
from gtd.providers.opencode import OpencodeProvider
from gtd.providers.pi import PiProvider
from provider_support import request_for

MODEL = "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"
GATEWAY = {"bedrock": "http://127.0.0.1:3129/bedrock"}


@pytest.fixture
def host(isolated_home, monkeypatch):
    for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_BEARER_TOKEN_BEDROCK", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # botocore asks no instance metadata service
    return isolated_home


def _opencode_own(home, bedrock: dict) -> None:
    path = home / ".config" / "opencode" / "opencode.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provider": {"amazon-bedrock": bedrock}}))


def test_opencode_takes_its_own_endpoint_region_and_api_key_and_writes_none_of_them(host, tmp_path, monkeypatch):
    monkeypatch.setenv("BEDROCK_KEY_VAR", "bedrock-key-from-config")
    _opencode_own(host, {"options": {"endpoint": "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com",
                                     "region": "eu-west-1", "apiKey": "{env:BEDROCK_KEY_VAR}", "profile": "dev",
                                     "timeout": 30},
                         "models": {"my-model": {"name": "mine"}}})
    provider = OpencodeProvider(home=host / ".gtd-opencode")
    provider.models = {"build": MODEL}
    needs = provider.sandbox_needs(tmp_path)
    route = next(r for r in needs.model_routes if r.name == "bedrock")
    assert route.upstream == "https://vpce-1.bedrock-runtime.eu-west-1.vpce.amazonaws.com"
    assert route.to_dict()["credentials"] == ["AWS_BEARER_TOKEN_BEDROCK"]  # the config's key, put in on the host
    assert route.signer.secrets() == ("bedrock-key-from-config",)
    assert dict(route.env) == {"AWS_BEARER_TOKEN_BEDROCK": "{placeholder}", "AWS_REGION": "eu-west-1"}
    assert not needs.credential_files and not needs.gateway_gaps
    config = provider.config(request_for(tmp_path, "go", Phase.BUILD, model=MODEL, gateway=GATEWAY),
                             provider.user_config(tmp_path))
    assert config["provider"]["amazon-bedrock"] == {
        "options": {"timeout": 30, "endpoint": GATEWAY["bedrock"], "baseURL": GATEWAY["bedrock"]},
        "models": {"my-model": {"name": "mine"}}}


def test_pi_writes_the_gateway_as_its_bedrock_base_url(host, tmp_path):
    own = host / ".pi" / "agent" / "models.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({"providers": {"amazon-bedrock": {"baseUrl": "https://bedrock.proxy.example",
                                                                "apiKey": "LITERAL-KEY", "models": [{"id": "x"}]}}}))
    provider = PiProvider(home=host / ".gtd-pi")
    provider.models = {"build": MODEL}
    (host / ".aws").mkdir()
    (host / ".aws" / "credentials").write_text("[default]\naws_access_key_id = AKIAX\naws_secret_access_key = s\n")
    needs = provider.sandbox_needs(tmp_path)
    route = next(r for r in needs.model_routes if r.name == "bedrock")
    assert route.upstream == "https://bedrock.proxy.example"
    assert route.to_dict()["credentials"] == ["AWS credentials (SigV4, signed on the host)"]
    assert dict(route.env) == {"AWS_BEARER_TOKEN_BEDROCK": "{placeholder}", "AWS_REGION": "ap-south-1",
                               "AWS_BEDROCK_FORCE_HTTP1": "1"}
    provider.prepare(request_for(tmp_path, "go", Phase.BUILD, model=MODEL, gateway=GATEWAY),
                     provider.user_config(tmp_path))
    written = json.loads((provider.home / "models.json").read_text())["providers"]["amazon-bedrock"]
    assert written == {"models": [{"id": "x"}], "baseUrl": GATEWAY["bedrock"]}


def test_without_a_way_to_sign_the_credentials_go_in_and_doctor_says_why(host, tmp_path):
    provider = PiProvider(home=host / ".gtd-pi")
    provider.models = {"build": MODEL}
    needs = provider.sandbox_needs(tmp_path)  # no key, no AWS credential anywhere on the host
    assert "bedrock" not in [r.name for r in needs.model_routes]
    assert needs.gateway_gaps == {"Bedrock": "no AWS credentials on the host"}
    assert host / ".aws" / "credentials" in needs.credential_files
