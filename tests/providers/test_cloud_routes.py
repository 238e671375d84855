"""Claude's Bedrock and Vertex routes (gtd/providers/cloud_routes.py) on the host side: the gateway signs
only a request that carries the session's placeholder, and the host never runs or trusts a cloud credential
file the agent could have written (botocore runs a profile's `credential_process` on the host)."""

from __future__ import annotations

import json
import socket
import sys

import pytest

from gtd.providers.cloud_credentials import BEDROCK, VERTEX
from gtd.providers.cloud_routes import claude_cloud_route
from gtd.sandbox.network.credential_gateway import CredentialGateway, GatewayRoute

pytest.importorskip("botocore", reason="the cloud extra (scripts/setup installs it)")


def process_profile(path, marker) -> None:
    """An AWS config whose default profile gets its keys from a command that leaves `marker` behind."""
    script = path.parent / "creds.py"
    script.write_text(f"import json, pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
                      "print(json.dumps({'Version': 1, 'AccessKeyId': 'AKIAPROCESS', 'SecretAccessKey': 's'}))\n")
    path.write_text(f"[default]\nregion = ap-south-1\ncredential_process = {sys.executable} {script}\n")


def aws_env(home, **extra) -> dict:
    return {"HOME": str(home), "CLAUDE_CODE_USE_BEDROCK": "1", **extra}


def test_the_persons_aws_profile_is_signed_for_on_the_host(tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    marker = tmp_path / "ran"
    process_profile(home / ".aws" / "config", marker)
    route, gap = claude_cloud_route(BEDROCK, "test", aws_env(home), workspace=tmp_path / "ws")
    assert gap == "" and route is not None and route.name == "bedrock"
    assert marker.read_text() == "ran"  # botocore ran the person's own credential_process, on the host
    assert route.upstream == "https://bedrock-runtime.ap-south-1.amazonaws.com"  # the profile's region
    assert route.signer.upstream("inference-profiles?type=SYSTEM_DEFINED") == "https://bedrock.ap-south-1.amazonaws.com"
    assert dict(route.env)["AWS_REGION"] == "ap-south-1"


@pytest.mark.parametrize("how", ["named relative", "linked"])
def test_an_aws_config_the_agent_could_write_is_never_run(tmp_path, monkeypatch, how):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / ".aws").mkdir(parents=True)
    workspace.mkdir()
    marker = tmp_path / "ran"
    process_profile(workspace / "aws-config", marker)
    monkeypatch.chdir(workspace)
    if how == "linked":
        (home / ".aws" / "config").symlink_to(workspace / "aws-config")
        env = aws_env(home)
    else:
        env = aws_env(home, AWS_CONFIG_FILE="aws-config")
    route, gap = claude_cloud_route(BEDROCK, "test", env, workspace=workspace)
    assert route is None and "workspace" in gap and ("aws-config" if how != "linked" else ".aws/config") in gap
    assert not marker.exists()  # botocore never saw the file


def test_vertex_takes_only_key_and_login_files(tmp_path):
    pytest.importorskip("google.auth")
    path = tmp_path / "external.json"
    path.write_text(json.dumps({"type": "external_account", "credential_source": {"executable": {"command": "x"}}}))
    route, gap = claude_cloud_route(VERTEX, "test", {"GOOGLE_APPLICATION_CREDENTIALS": str(path)}, workspace=tmp_path / "ws")
    assert route is None and "'external_account'" in gap and "service_account and authorized_user" in gap


def test_a_vertex_key_file_in_the_workspace_is_refused(tmp_path):
    pytest.importorskip("google.auth")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "sa.json").write_text(json.dumps({"type": "authorized_user", "client_id": "a", "client_secret": "b",
                                                   "refresh_token": "c"}))
    route, gap = claude_cloud_route(VERTEX, "test", {"GOOGLE_APPLICATION_CREDENTIALS": str(workspace / "sa.json")},
                                    workspace=workspace)
    assert route is None and "workspace" in gap


class RecordingSigner:
    name = "test signer"

    def __init__(self):
        self.signed: list[str] = []

    def secrets(self):
        return ()

    def upstream(self, path):
        return "http://127.0.0.1:9"  # never reached in these tests

    def refuses(self, method, path):
        return None if path.startswith("model/") else f"{method} /{path} is not a model call"

    def sign(self, method, url, headers, body):
        self.signed.append(url)
        raise RuntimeError("stop here")


def ask(port: int, path: str, auth: str | None) -> bytes:
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                  + (f"Authorization: {auth}\r\n" if auth else "") + "\r\n{}").encode())
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    return data


def test_the_gateway_signs_only_for_this_sessions_placeholder():
    signer = RecordingSigner()
    misuse: list = []
    gateway = CredentialGateway([GatewayRoute("bedrock", "http://127.0.0.1:9", signer=signer),
                                 GatewayRoute("anthropic", "http://127.0.0.1:9", ("ANTHROPIC_API_KEY",))],
                                environ={"ANTHROPIC_API_KEY": "sk-real-" + "a" * 20},
                                on_misuse=lambda route, why: misuse.append(route))
    listener = socket.create_server(("127.0.0.1", 0))
    gateway.serve(listener)
    port = listener.getsockname()[1]
    try:
        mine = gateway.login_placeholders["bedrock"]
        assert ask(port, "/bedrock/model/m/invoke", None).startswith(b"HTTP/1.1 403")
        assert ask(port, "/bedrock/model/m/invoke", "Bearer gtd-placeholder-" + "0" * 40).startswith(b"HTTP/1.1 403")
        other = gateway.env_placeholders["ANTHROPIC_API_KEY"]
        assert ask(port, "/bedrock/model/m/invoke", f"Bearer {other}").startswith(b"HTTP/1.1 403") and misuse == ["bedrock"]
        assert signer.signed == []  # nothing was signed for any of them
        answer = ask(port, "/bedrock/model/m/invoke", f"Bearer {mine}")
        assert answer.startswith(b"HTTP/1.1 502") and b"cannot sign for bedrock: stop here" in answer
        assert signer.signed == ["http://127.0.0.1:9/model/m/invoke"]
        # Its placeholder sent elsewhere is misuse too, and so is a call that is not a model call.
        assert ask(port, "/anthropic/v1/messages", f"Bearer {mine}").startswith(b"HTTP/1.1 403")
        refused = ask(port, "/bedrock/async-invoke", f"Bearer {mine}")
        assert refused.startswith(b"HTTP/1.1 403") and b"not a model call" in refused
        assert misuse == ["bedrock", "anthropic", "bedrock"] and len(signer.signed) == 1
    finally:
        gateway.stop_serving(listener)
        listener.close()


@pytest.mark.parametrize("method,path,signed", [
    ("POST", "model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream", True),
    ("POST", "model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream", True),
    ("POST", "model/x/count-tokens", True),
    ("GET", "inference-profiles?type=SYSTEM_DEFINED", True),
    ("POST", "async-invoke", False),  # writes its answer to S3 with the host's identity
    ("DELETE", "inference-profiles/mine", False),
    ("POST", "model/x/invoke/../../guardrails", False),
    ("GET", "model/x/invoke", False),
    ("POST", "model/../invoke", False),
])
def test_bedrock_signs_model_calls_only(method, path, signed):
    route, _ = claude_cloud_route(BEDROCK, "test", {"AWS_BEARER_TOKEN_BEDROCK": "k", "AWS_REGION": "us-east-1"})
    assert (route.signer.refuses(method, path) is None) == signed


@pytest.mark.parametrize("path,signed", [
    ("projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict", True),
    ("projects/p/locations/global/publishers/anthropic/models/count-tokens:rawPredict", True),
    ("projects/p/locations/us-east5/publishers/google/models/gemini:generateContent", False),
    ("projects/p/locations/us-east5/endpoints", False),
])
def test_vertex_tokens_go_to_anthropic_model_calls_only(tmp_path, path, signed):
    pytest.importorskip("google.auth")
    key = tmp_path / "user.json"
    key.write_text(json.dumps({"type": "authorized_user", "client_id": "a", "client_secret": "b", "refresh_token": "c"}))
    route, gap = claude_cloud_route(VERTEX, "test", {"GOOGLE_APPLICATION_CREDENTIALS": str(key)}, workspace=tmp_path / "ws")
    assert gap == "" and (route.signer.refuses("POST", path) is None) == signed
