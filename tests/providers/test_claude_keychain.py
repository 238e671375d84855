"""Claude's macOS Keychain login, read and refreshed on the host (gtd/providers/claude_keychain.py), through a fake
`security` executable (tests/fake_macos.py) that keeps the item in a file and records each argv and stdin: the
real code path runs, only the Keychain is a stand-in. Whether the real `security` answers the same way (exit
status 44, `-w` printing the JSON, `-i` reading `add-generic-password -X`) can only be checked on a Mac."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request  # noqa: F401 - imported on Linux (under a simulated darwin it wants _scproxy)
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fake_macos import FakeSecurity
from gtd.errors import GtdError
from gtd.providers import claude_keychain
from gtd.providers.claude_keychain import KeychainLogin, service_name

TOKEN = "sk-ant-oat01-" + os.urandom(12).hex()
FRESH = "sk-ant-oat01-fresh-" + os.urandom(12).hex()


def login(expires_in: float = 8 * 3600, token: str = TOKEN) -> dict:
    return {"claudeAiOauth": {"accessToken": token, "refreshToken": "sk-ant-ort01-old", "subscriptionType": "max",
                              "expiresAt": int((time.time() + expires_in) * 1000), "scopes": ["user:inference"]}}


@pytest.fixture
def security(tmp_path, monkeypatch):
    """The fake `security` where gtd runs /usr/bin/security; the user is `dev`, claude's config dir the default."""
    fake = FakeSecurity(tmp_path / "bin")
    monkeypatch.setattr(claude_keychain, "SECURITY", str(fake.path))
    monkeypatch.setenv("USER", "dev")
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return fake


@pytest.fixture
def token_endpoint(monkeypatch):
    """Anthropic's OAuth token endpoint stand-in: answers a refresh with FRESH and records each body."""
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers.get("content-length") or 0))))
            answer = json.dumps({"access_token": FRESH, "refresh_token": "sk-ant-ort01-fresh", "expires_in": 28800}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GTD_CLAUDE_TOKEN_URL", f"http://127.0.0.1:{server.server_address[1]}/v1/oauth/token")
    yield bodies
    server.shutdown()
    server.server_close()


def test_the_login_is_read_from_claudes_item_with_security_w(security, tmp_path):
    security.store(login())
    keychain = KeychainLogin(tmp_path / "claude" / ".credentials.json")
    assert keychain.token() == TOKEN
    assert security.calls()[-1]["argv"] == ["find-generic-password", "-a", "dev", "-w", "-s", "Claude Code-credentials"]
    assert keychain.token() == TOKEN and len(security.calls()) == 1  # kept in memory while it is fresh
    stand_in = json.loads(keychain.stand_in("gtd-placeholder-" + "0" * 40))["claudeAiOauth"]
    assert stand_in["accessToken"] == stand_in["refreshToken"] == "gtd-placeholder-" + "0" * 40
    assert stand_in["subscriptionType"] == "max" and TOKEN not in json.dumps(stand_in)


def test_a_password_printed_in_hex_is_read_too(security, tmp_path):
    security.store(login())
    security.print_hex()
    assert KeychainLogin(tmp_path / ".credentials.json").token() == TOKEN


def test_an_expired_login_is_refreshed_and_written_back_on_stdin(security, token_endpoint, tmp_path):
    security.store(login(expires_in=-60))
    keychain = KeychainLogin(tmp_path / ".credentials.json")
    assert keychain.token() == FRESH
    assert token_endpoint and token_endpoint[0]["refresh_token"] == "sk-ant-ort01-old"
    saved = security.item()["claudeAiOauth"]  # the person's own claude finds the new tokens in its item
    assert saved["accessToken"] == FRESH and saved["refreshToken"] == "sk-ant-ort01-fresh"
    assert saved["subscriptionType"] == "max" and saved["expiresAt"] > time.time() * 1000
    write = next(call for call in security.calls() if call["argv"][:1] == ["-i"])
    assert write["argv"] == ["-i"]  # the tokens went on stdin, never on a command line other processes can read
    assert write["stdin"].startswith('add-generic-password -U -a "dev" -s "Claude Code-credentials" -X "')
    assert not any(FRESH in arg or FRESH.encode().hex() in arg for call in security.calls() for arg in call["argv"])
    calls = len(security.calls())
    assert keychain.token() == FRESH and len(security.calls()) == calls  # the refreshed login is kept in memory


def test_a_refresh_that_cannot_be_saved_stops_with_how_to_log_in_again(security, token_endpoint, tmp_path):
    security.store(login(expires_in=-60))
    security.fail_writes()
    with pytest.raises(GtdError, match=r"could not refresh it .*could not save the refreshed login to the macOS "
                                       r"Keychain: .*User interaction is not allowed.*claude -p hi"):
        KeychainLogin(tmp_path / ".credentials.json").token()


def test_a_write_that_security_drops_silently_is_caught_by_reading_it_back(security, token_endpoint, tmp_path):
    security.store(login(expires_in=-60))
    security.ignore_writes()
    with pytest.raises(GtdError, match=r"could not refresh it .*did not save the refreshed login to the macOS Keychain"):
        KeychainLogin(tmp_path / ".credentials.json").token()


def test_no_item_is_named_with_what_to_do(security, tmp_path):
    with pytest.raises(GtdError, match=r"no Claude login in the macOS Keychain \(service 'Claude Code-credentials', "
                                       r"account 'dev'\): log in with `claude` and /login .*ANTHROPIC_API_KEY"):
        KeychainLogin(tmp_path / ".credentials.json").token()
    assert claude_keychain.keychain_login(tmp_path / ".credentials.json") is None
    assert security.calls()[-1]["argv"] == ["find-generic-password", "-a", "dev", "-s", "Claude Code-credentials"]


def test_a_malformed_item_is_refused(security, tmp_path):
    security.store("{not json")
    with pytest.raises(GtdError, match=r"is not a login gtd can read \(not JSON with claudeAiOauth\)"):
        KeychainLogin(tmp_path / ".credentials.json").token()
    security.store({"something": "else"})
    with pytest.raises(GtdError, match=r"not JSON with claudeAiOauth"):
        KeychainLogin(tmp_path / ".credentials.json").token()


def test_security_missing_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(claude_keychain, "SECURITY", str(tmp_path / "no-such" / "security"))
    with pytest.raises(GtdError, match=r"security not found: gtd cannot read your Claude login from the macOS "
                                       r"Keychain.*ANTHROPIC_API_KEY"):
        KeychainLogin(tmp_path / ".credentials.json").token()


def test_the_service_and_account_are_named_as_claude_names_them(monkeypatch):
    assert service_name({}) == "Claude Code-credentials"
    # claude adds the first 8 hex digits of its config dir's SHA-256 (the path as given, NFC) when CLAUDE_CONFIG_DIR
    # is set: `Claude Code${OAUTH_FILE_SUFFIX}-credentials-${sha256(dir).hex().slice(0, 8)}` in the pinned CLI
    assert service_name({"CLAUDE_CONFIG_DIR": "/Users/dev/.claude-work"}) == "Claude Code-credentials-4298c2ba"
    assert service_name({"CLAUDE_CONFIG_DIR": "/Users/de\u0301v"}) == service_name({"CLAUDE_CONFIG_DIR": "/Users/d\u00e9v"})
    assert service_name({"CLAUDE_CONFIG_DIR": ""}) == "Claude Code-credentials"
    assert claude_keychain.account_name({"USER": "dev"}) == "dev"
    assert claude_keychain.account_name({"USER": "dév ile"}) == "claude-code-user"


def test_on_macos_claude_uses_the_keychain_login_when_there_is_no_login_file(security, isolated_home, monkeypatch):
    from gtd.providers.claude import ClaudeProvider, host_login

    security.store(login())
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert host_login(isolated_home / "x") is None  # on Linux the Keychain is never asked
    monkeypatch.setattr(sys, "platform", "darwin")
    provider = ClaudeProvider()
    route = provider.sandbox_needs(isolated_home)
    (anthropic,) = route.model_routes
    assert isinstance(anthropic.login, KeychainLogin) and anthropic.login.target == provider.config_dir / ".credentials.json"
    assert anthropic.login.token() == TOKEN
    (isolated_home / ".claude").mkdir()
    (isolated_home / ".claude" / ".credentials.json").write_text(json.dumps(login(token="sk-ant-oat01-file")))
    assert not isinstance(host_login(isolated_home / "x"), KeychainLogin)  # the login file comes first


@pytest.mark.e2e
def test_on_macos_the_real_claude_runs_on_the_placeholder_and_the_model_gets_the_keychain_token(
        claude_agent, uncommitted_repo, fake_model, isolated_home, security, token_endpoint, tmp_path, monkeypatch):
    """macOS simulated (sys.platform "darwin", a fake `sandbox-exec` that runs claude UNSANDBOXED, the fake
    Keychain): the pinned claude reads gtd's placeholder login file, its model requests go through the gateway
    on the host's loopback, and the model gets the Keychain's token, refreshed on the host first."""
    from types import SimpleNamespace

    from fake_macos import fake_sandbox_exec
    from fakemodel.server import say, shell
    from gtd.config.schema import GtdConfig, Level, Phase
    from gtd.providers.registry import get_provider
    from gtd.providers.runner import run_agent
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox
    from provider_support import request_for

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    security.store(login(expires_in=-60))
    fake_sandbox_exec(tmp_path / "macos-bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'macos-bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "platform", "darwin")
    provider = get_provider("claude", GtdConfig.model_validate({"provider": "claude"}))
    fake_model.script([shell('cat "$CLAUDE_CONFIG_DIR/.credentials.json"; echo; echo "$ANTHROPIC_BASE_URL"; '
                             'echo DUMP-DONE'), say("done")])
    policy = build_policy(GtdConfig(), workspace=uncommitted_repo, level=Level.READWRITE, phase=Phase.BUILD,
                          needs=provider.sandbox_needs(uncommitted_repo), home=isolated_home)
    session = open_sandbox(policy)
    try:
        assert session.backend.name == "seatbelt"
        port = session.backend.gateway_port
        result = run_agent(provider, request_for(uncommitted_repo, "Look around", Phase.BUILD), session,
                           timeouts=SimpleNamespace(inactivity_seconds=90, run_seconds=180))
    finally:
        session.close()
    assert result.ok, f"{result.error}\n{result.stderr[-3000:]}"
    main = fake_model.main_requests()
    assert main and {r.headers.get("authorization") for r in main} == {f"Bearer {FRESH}"}
    sent_back = json.dumps([r.body for r in main])
    assert "DUMP-DONE" in sent_back and "gtd-placeholder-" in sent_back and f"127.0.0.1:{port}/anthropic" in sent_back
    assert FRESH not in sent_back and TOKEN not in sent_back and "sk-ant-ort01" not in sent_back
    assert security.item()["claudeAiOauth"]["accessToken"] == FRESH  # saved for the person's own claude
