"""Red team, stop 32: a prompt-injected agent holding a cloud route's placeholder talks to the real credential
gateway on a socket and tries to get the host's cloud identity used for something other than a model call, or
to get the host to run or hang on a cloud credential file it wrote. Each test asserts the attack is refused."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from gtd.providers.cloud_credentials import BEDROCK, VERTEX
from gtd.providers.cloud_routes import BedrockKey, VertexToken, claude_cloud_route
from gtd.sandbox.network import credential_forward
from gtd.sandbox.network.credential_gateway import CredentialGateway, GatewayRoute

REAL_KEY = "bedrock-real-key-" + "k" * 24
REAL_TOKEN = "ya29.real-google-token-" + "t" * 24


class Upstream:
    """A plain-HTTP upstream that records every request it is sent (raw bytes) and answers 200."""

    def __init__(self, answer: bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"):
        self.answer = answer
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.settimeout(2)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
                length = next((int(x.split(":", 1)[1]) for x in head.split("\r\n") if x.startswith("content-length:")), 0)
                while len(data.split(b"\r\n\r\n", 1)[-1]) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                self.requests.append(data)
                conn.sendall(self.answer)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self):
        self.listener.close()


@pytest.fixture
def upstream():
    server = Upstream()
    yield server
    server.close()


class Served:
    def __init__(self, route: GatewayRoute):
        self.misuse: list[str] = []
        self.gateway = CredentialGateway([route], environ={}, on_misuse=lambda r, why: self.misuse.append(why))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.gateway.serve(self.listener)
        self.port = self.listener.getsockname()[1]
        self.placeholder = self.gateway.login_placeholders[route.name]

    def send(self, raw: bytes, *, half_close: bool = True) -> bytes:
        conn = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        conn.sendall(raw)
        if half_close:
            conn.shutdown(socket.SHUT_WR)
        data = b""
        try:
            while chunk := conn.recv(65536):
                data += chunk
        finally:
            conn.close()
        return data

    def post(self, target: str, body: bytes = b"{}", extra: str = "") -> bytes:
        return self.send((f"POST {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {self.placeholder}\r\n"
                          f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body)

    def close(self):
        self.gateway.stop_serving(self.listener)
        self.listener.close()


@pytest.fixture
def vertex(upstream):
    google = pytest.importorskip("google.oauth2.credentials")
    signer = VertexToken(google.Credentials(token=REAL_TOKEN), f"http://127.0.0.1:{upstream.port}/v1", "test")
    served = Served(GatewayRoute("vertex", signer.upstream(""), signer=signer))
    yield served
    served.close()


@pytest.fixture
def bedrock(upstream):
    signer = BedrockKey(REAL_KEY, "us-east-1", f"http://127.0.0.1:{upstream.port}")
    served = Served(GatewayRoute("bedrock", signer.upstream(""), signer=signer))
    yield served
    served.close()


VERTEX_MODEL = "projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"


def test_vertex_model_call_still_signed(vertex, upstream):
    answer = vertex.post("/vertex/" + VERTEX_MODEL)
    assert answer.startswith(b"HTTP/1.1 200") and len(upstream.requests) == 1
    assert f"Bearer {REAL_TOKEN}".encode() in upstream.requests[0]
    assert upstream.requests[0].startswith(f"POST /v1/{VERTEX_MODEL} HTTP/1.1".encode())


@pytest.mark.parametrize("smuggled", [
    # A `?` inside the location segment: the upstream's path ends at Model Garden's deploy.
    "projects/p/locations/us-east5:deploy?x=/publishers/anthropic/models/m:rawPredict",
    "projects/p:setIamPolicy?x=/locations/us-east5/publishers/anthropic/models/m:rawPredict",
    "projects/p/locations/us-east5#/publishers/anthropic/models/m:rawPredict",
    "projects/p/locations/us-east5/publishers/anthropic/models/m:predict#:rawPredict",
    "projects/p/locations/us-east5/publishers/anthropic/models/m:rawPredict?#",
])
def test_vertex_token_never_goes_to_a_path_cut_short_by_query_or_fragment(vertex, upstream, smuggled):
    answer = vertex.post("/vertex/" + smuggled)
    assert answer.startswith(b"HTTP/1.1 403") and b"not an Anthropic model call" in answer
    assert upstream.requests == [] and vertex.misuse


@pytest.mark.parametrize("smuggled", [
    "model/x#/invoke",
    "model/x/invoke#",
    "foundation-models/..",  # a dot segment: GET the control plane's root
])
def test_bedrock_key_never_goes_to_a_path_cut_short_by_fragment_or_dot_segment(bedrock, upstream, smuggled):
    method = "GET" if smuggled.startswith("foundation") else "POST"
    answer = bedrock.send((f"{method} /bedrock/{smuggled} HTTP/1.1\r\nAuthorization: Bearer {bedrock.placeholder}\r\n"
                           "Content-Length: 2\r\n\r\n{}").encode())
    assert answer.startswith(b"HTTP/1.1 403") and upstream.requests == []


def test_vertex_region_from_the_path_never_names_another_host():
    google = pytest.importorskip("google.oauth2.credentials")
    signer = VertexToken(google.Credentials(token=REAL_TOKEN), "", "test")
    for region in ("evil.example.com", "us-east5\n", "us-east5.evil", "a" * 41, "us-east5%2F..", "x@evil", "x:1"):
        host = urlsplit(signer.upstream(f"projects/p/locations/{region}/publishers/anthropic/models/m:rawPredict"))
        assert host.netloc == "us-east5-aiplatform.googleapis.com", region
    assert signer.refuses("POST", "projects/p/locations/us-east5/publishers/anthropic/models/m:rawPredict\n")


@pytest.mark.parametrize("line", [
    "POST http://evil.example/bedrock/model/m/invoke HTTP/1.1",  # absolute form
    "POST bedrock/model/m/invoke HTTP/1.1",  # no leading slash
    "POST /bedrock/model/m/invoke\n HTTP/1.1",  # a bare newline in the target
    "POST /bedrock/model/m/invoke?x=\tHTTP/1.1 HTTP/1.1",
])
def test_odd_request_targets_are_never_signed(bedrock, upstream, line):
    answer = bedrock.send(f"{line}\r\nAuthorization: Bearer {bedrock.placeholder}\r\nContent-Length: 0\r\n\r\n".encode())
    assert answer.startswith((b"HTTP/1.1 404", b"HTTP/1.1 403", b"HTTP/1.1 400", b"HTTP/1.1 502"))
    assert all(REAL_KEY.encode() not in r for r in upstream.requests) and REAL_KEY.encode() not in answer


@pytest.mark.parametrize("header", [
    " folded: yes",  # obs-fold
    "X Name: v",  # a space in the name
    "X-Name : v",
    "NoColon",
])
def test_malformed_headers_are_refused(bedrock, upstream, header):
    answer = bedrock.post("/bedrock/model/m/invoke", extra=header + "\r\n")
    assert answer.startswith(b"HTTP/1.1 400") and upstream.requests == []


def test_a_pipelined_second_request_never_reaches_upstream(bedrock, upstream):
    second = (f"POST /bedrock/async-invoke HTTP/1.1\r\nAuthorization: Bearer {bedrock.placeholder}\r\n"
              "Content-Length: 2\r\n\r\n{}").encode()
    answer = bedrock.send((f"POST /bedrock/model/m/invoke HTTP/1.1\r\nAuthorization: Bearer {bedrock.placeholder}\r\n"
                           "Content-Length: 2\r\n\r\n{}").encode() + second)
    assert answer.startswith(b"HTTP/1.1 200") and answer.count(b"HTTP/1.1") == 1
    assert len(upstream.requests) == 1 and b"async-invoke" not in upstream.requests[0]


def test_chunked_and_content_length_together_send_one_reframed_request(bedrock, upstream):
    smuggle = b"POST /async-invoke HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
    body = b"2\r\n{}\r\n0\r\n\r\n" + smuggle
    answer = bedrock.send((f"POST /bedrock/model/m/invoke HTTP/1.1\r\nAuthorization: Bearer {bedrock.placeholder}\r\n"
                           f"Transfer-Encoding: chunked\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body)
    assert answer.startswith(b"HTTP/1.1 200") and len(upstream.requests) == 1
    sent = upstream.requests[0]
    assert sent.endswith(b"\r\n\r\n{}") and b"async-invoke" not in sent and b"chunked" not in sent.lower()


def test_two_content_lengths_and_an_oversized_body_are_refused_without_reading(bedrock, upstream):
    answer = bedrock.post("/bedrock/model/m/invoke", extra="Content-Length: 5\r\n")
    assert answer.startswith(b"HTTP/1.1 400")
    started = time.monotonic()
    huge = credential_forward.MAX_BODY + 1
    answer = bedrock.send((f"POST /bedrock/model/m/invoke HTTP/1.1\r\nAuthorization: Bearer {bedrock.placeholder}\r\n"
                           f"Content-Length: {huge}\r\n\r\n").encode(), half_close=False)
    assert answer.startswith(b"HTTP/1.1 400") and time.monotonic() - started < 2 and upstream.requests == []


def test_the_sandboxs_host_header_and_second_authorization_never_reach_upstream(bedrock, upstream):
    answer = bedrock.post("/bedrock/model/m/invoke", extra="Host: evil.example\r\nAuthorization: Bearer mine\r\n"
                                                           "X-Amz-Date: 20200101T000000Z\r\n")
    assert answer.startswith(b"HTTP/1.1 200")
    head = upstream.requests[0].split(b"\r\n\r\n")[0].decode().lower()
    assert "evil.example" not in head and head.count("authorization:") == 1 and "bearer mine" not in head
    assert f"host: 127.0.0.1:{upstream.port}" in head and "x-amz-date" not in head


def test_a_redirect_is_passed_back_never_followed(bedrock, upstream):
    upstream.answer = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://evil.example/\r\nContent-Length: 0\r\n\r\n"
    answer = bedrock.post("/bedrock/model/m/invoke")
    assert answer.startswith(b"HTTP/1.1 307") and len(upstream.requests) == 1 and REAL_KEY.encode() not in answer


def test_an_error_that_echoes_the_key_is_scrubbed(bedrock, upstream):
    upstream.answer = (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\nbad key " % (len(REAL_KEY) + 8)
                       + REAL_KEY.encode())
    answer = bedrock.post("/bedrock/model/m/invoke")
    assert answer.startswith(b"HTTP/1.1 401") and REAL_KEY.encode() not in answer and b"removed by gtd" in answer


# -- the host reading cloud credential files -------------------------------------------------------

def _process_profile(path, marker):
    script = path.parent / "creds.py"
    script.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    path.write_text(f"[default]\ncredential_process = {os.sys.executable} {script}\n")


def _home_and_workspace(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / ".aws").mkdir(parents=True)
    workspace.mkdir()
    return home, workspace


@pytest.mark.parametrize("how", ["dotdot", "fifo", "huge", "linked dir", "credentials file"])
def test_an_aws_file_the_agent_could_write_never_runs_or_hangs(tmp_path, how):
    pytest.importorskip("botocore")
    home, workspace = _home_and_workspace(tmp_path)
    marker = tmp_path / "ran"
    env = {"HOME": str(home), "CLAUDE_CODE_USE_BEDROCK": "1"}
    if how == "dotdot":
        _process_profile(workspace / "cfg", marker)
        env["AWS_CONFIG_FILE"] = str(home / ".." / "ws" / "cfg")
    elif how == "fifo":
        os.mkfifo(home / ".aws" / "config")
    elif how == "huge":
        _process_profile(home / ".aws" / "config", marker)
        with open(home / ".aws" / "config", "a") as out:
            out.write("#" * (300 * 1024))
    elif how == "linked dir":
        (home / ".aws").rmdir()
        (workspace / "aws").mkdir()
        _process_profile(workspace / "aws" / "config", marker)
        (home / ".aws").symlink_to(workspace / "aws")
    else:  # credential_process is read from the credentials file too
        _process_profile(workspace / "creds", marker)
        env["AWS_SHARED_CREDENTIALS_FILE"] = str(workspace / "creds")
    started = time.monotonic()
    route, gap = claude_cloud_route(BEDROCK, "test", env, workspace=workspace)
    assert route is None and gap and not marker.exists() and time.monotonic() - started < 2


def test_a_google_credential_file_reached_through_the_workspace_is_refused(tmp_path):
    pytest.importorskip("google.auth")
    home, workspace = _home_and_workspace(tmp_path)
    (workspace / "adc.json").write_text(json.dumps({"type": "service_account", "token_uri": "http://evil/"}))
    gcloud = home / ".config" / "gcloud"
    gcloud.mkdir(parents=True)
    (gcloud / "application_default_credentials.json").symlink_to(workspace / "adc.json")
    route, gap = claude_cloud_route(VERTEX, "test", {"HOME": str(home)}, workspace=workspace)
    assert route is None and "workspace" in gap
    os.mkfifo(tmp_path / "fifo")
    started = time.monotonic()
    route, gap = claude_cloud_route(VERTEX, "test", {"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "fifo")},
                                    workspace=workspace)
    assert route is None and time.monotonic() - started < 2


def test_an_encoded_slash_never_carries_the_vertex_token(vertex, upstream):
    for path in ("projects/p/locations/us-east5/publishers/anthropic/models/..%2F..%2F..%2Fendpoints%2Fe:rawPredict",
                 "projects/p%2f..%2fq/locations/us-east5/publishers/anthropic/models/m:rawPredict",
                 "projects/p/locations/us-east5/publishers/anthropic/models/m%5C..%5Cx:rawPredict"):
        assert vertex.post("/vertex/" + path).startswith(b"HTTP/1.1 403"), path
    assert upstream.requests == []


# -- the start hold --------------------------------------------------------------------------------

@pytest.mark.parametrize("launcher", ["native", "python"])
def test_the_hold_takes_only_gtds_go_and_the_command_never_holds_its_socket(launcher, tmp_path):
    import subprocess
    import sys

    from support import launcher_command

    prefix = launcher_command(launcher)
    ran = tmp_path / "ran"
    for answer, status in ((b"0", 126), (b"11", 0)):  # anything but gtd's "1" is no go
        mine, theirs = socket.socketpair()
        fd = theirs.fileno()
        check = f"import os,sys\ntry: os.fstat({fd})\nexcept OSError: open(sys.argv[1], 'w').write('closed')"
        proc = subprocess.Popen([*prefix, "--hold", str(fd), "--", sys.executable, "-c", check, str(ran)],
                                pass_fds=(fd,))
        theirs.close()
        assert mine.recv(1) == b"r"
        mine.sendall(answer)
        mine.close()
        assert proc.wait(10) == status
        assert (ran.read_text() if ran.exists() else None) == ("closed" if status == 0 else None)
        ran.unlink(missing_ok=True)


# -- the macOS Keychain reader ---------------------------------------------------------------------

def test_keychain_names_and_login_cannot_inject_into_security_i(tmp_path, monkeypatch):
    from fake_macos import FakeSecurity
    from gtd.providers import claude_keychain

    fake = FakeSecurity(tmp_path / "bin")
    monkeypatch.setattr(claude_keychain, "SECURITY", str(fake.path))
    monkeypatch.setenv("USER", 'dev" -s "other\ndelete-keychain')
    assert claude_keychain.account_name() == "claude-code-user"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", '/x" ; delete-keychain "')
    assert claude_keychain.service_name().startswith("Claude Code-credentials-") and '"' not in claude_keychain.service_name()
    evil = 'tok" -s "x"\ndelete-keychain login.keychain\n'
    fake.store({"claudeAiOauth": {"accessToken": "old"}}, account="claude-code-user", service=claude_keychain.service_name())
    claude_keychain.write_login(claude_keychain.service_name(), "claude-code-user", {"claudeAiOauth": {"accessToken": evil}})
    stdin = fake.calls()[-2]["stdin"]
    assert stdin.count("\n") == 1 and "delete-keychain" not in stdin and json.dumps({"claudeAiOauth": {"accessToken": evil}}).encode().hex() in stdin


# -- from inside the real sandbox ------------------------------------------------------------------

INSIDE = r"""
import os, socket, sys
from urllib.parse import urlsplit
url = urlsplit(os.environ["GTD_RT_URL"])
for target in sys.argv[1:]:
    conn = socket.create_connection((url.hostname, url.port), timeout=5)
    conn.sendall(("POST " + url.path + "/" + target + " HTTP/1.1\r\nAuthorization: Bearer " + os.environ["GTD_RT_PH"]
                  + "\r\nContent-Length: 2\r\n\r\n{}").encode())
    data = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    print(data.split(b"\r\n")[0].decode())
"""


def test_from_inside_bwrap_only_the_model_call_gets_the_token(tmp_path, upstream, isolated_home):
    import shutil
    import subprocess

    google = pytest.importorskip("google.oauth2.credentials")
    if shutil.which("bwrap") is None:
        pytest.skip("no bwrap")
    from gtd.config.schema import GtdConfig, Level, Phase
    from gtd.sandbox.policy.needs import SandboxNeeds
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    signer = VertexToken(google.Credentials(token=REAL_TOKEN), f"http://127.0.0.1:{upstream.port}/v1", "test")
    route = GatewayRoute("vertex", signer.upstream(""), signer=signer,
                         env=(("GTD_RT_URL", "{url}"), ("GTD_RT_PH", "{placeholder}")))
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, phase=Phase.BUILD,
                          needs=SandboxNeeds(model_routes=[route]), home=isolated_home)
    session = open_sandbox(policy)
    try:
        done = session.run(["python3", "-c", INSIDE, VERTEX_MODEL,
                            "projects/p/locations/us-east5:deploy?x=/publishers/anthropic/models/m:rawPredict",
                            "projects/p/locations/us-east5/publishers/anthropic/models/%2E%2E%2Fx:rawPredict"],
                           cwd=repo, timeout=30)
    finally:
        session.close()
    statuses = done.stdout.decode().split("\n")[:3]
    assert [s.split(" ")[1] if " " in s else s for s in statuses] == ["200", "403", "403"], done.stderr.decode()
    assert len(upstream.requests) == 1 and f"/v1/{VERTEX_MODEL}".encode() in upstream.requests[0]
    assert REAL_TOKEN.encode() not in done.stdout + done.stderr


def test_the_vertex_token_bills_only_the_persons_project(tmp_path):
    pytest.importorskip("google.auth")
    key = tmp_path / "user.json"
    key.write_text(json.dumps({"type": "authorized_user", "client_id": "a", "client_secret": "b", "refresh_token": "c"}))
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(key), "ANTHROPIC_VERTEX_PROJECT_ID": "mine"}
    route, gap = claude_cloud_route(VERTEX, "test", env, workspace=tmp_path / "ws")
    call = "projects/{}/locations/us-east5/publishers/anthropic/models/m:rawPredict"
    assert gap == "" and route.signer.refuses("POST", call.format("mine")) is None
    refused = route.signer.refuses("POST", call.format("employers-prod"))
    assert refused and "'employers-prod'" in refused and "ANTHROPIC_VERTEX_PROJECT_ID" in refused


def test_an_oversized_request_head_is_refused(bedrock, upstream):
    answer = bedrock.send(b"POST /bedrock/model/m/invoke HTTP/1.1\r\nX-Pad: " + b"a" * (70 * 1024) + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431") and upstream.requests == []


# -- credential_process found through a PATH entry the agent writes ---------------------------------

CREDS = "import json, pathlib, sys\npathlib.Path(sys.argv[1]).write_text('{}')\n" \
        "print(json.dumps({'Version': 1, 'AccessKeyId': 'AKIA', 'SecretAccessKey': 's'}))\n"


@pytest.mark.parametrize("how", ["bare name on a workspace PATH entry", "relative path", "helper it runs by name"])
def test_the_persons_credential_process_never_runs_a_program_the_agent_planted(tmp_path, monkeypatch, how):
    """The person's own ~/.aws/config names a program: botocore runs it on the host, found on gtd's PATH, in
    gtd's current directory. An activated project venv puts the workspace's .venv/bin first on that PATH."""
    import stat
    import sys

    pytest.importorskip("botocore")
    home, workspace = _home_and_workspace(tmp_path)
    planted, trusted = workspace / ".venv" / "bin", tmp_path / "trusted-bin"
    planted.mkdir(parents=True)
    trusted.mkdir()
    agent, person = tmp_path / "agent-ran", tmp_path / "person-ran"

    def program(where, name, marker, body=None):
        script = where / name
        script.write_text(body or f"#!{sys.executable}\n" + CREDS.replace("sys.argv[1]", repr(str(marker))))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)

    program(planted, "aws-creds", agent)
    program(trusted, "aws-creds", person)
    program(planted, "aws-helper", agent)
    program(trusted, "aws-helper", person)
    program(trusted, "wrapper", person, "#!/bin/sh\nexec aws-helper\n")
    command = {"bare name on a workspace PATH entry": "aws-creds", "relative path": ".venv/bin/aws-creds",
               "helper it runs by name": "wrapper"}[how]
    (home / ".aws" / "config").write_text(f"[default]\nregion = us-west-2\ncredential_process = {command} --json\n")
    monkeypatch.setenv("PATH", f"{planted}{os.pathsep}{trusted}{os.pathsep}/usr/bin:/bin")
    monkeypatch.chdir(workspace)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_CONFIG_FILE",
                "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(var, raising=False)
    route, gap = claude_cloud_route(BEDROCK, "test", {"HOME": str(home), "CLAUDE_CODE_USE_BEDROCK": "1"},
                                    workspace=workspace)
    assert not agent.exists(), "a program the agent planted ran on the host"
    if how == "relative path":
        assert route is None and "credential_process" in gap and ".venv/bin/aws-creds" in gap, gap
    else:
        assert route is not None and person.exists(), gap
