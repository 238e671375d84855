"""`gtd build` with each real agent CLI (claude, opencode, pi) against the fake model server, where
namespaces are refused (tests/sandbox/linux/no_userns.py, as Docker's default seccomp profile does): the
Landlock backend runs the agent, the build step lands, and a secret and a git hook stay out of reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakemodel.server import say, shell
from gtd.sandbox.linux.landlock import abi_version
from support import explain, git

pytestmark = [pytest.mark.e2e, pytest.mark.landlock,
              pytest.mark.skipif(abi_version() < 4, reason="the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")]

HARNESS = Path(__file__).resolve().parent.parent / "sandbox" / "linux" / "no_userns.py"
ITEM = "Write docs/hello.txt saying hi"
PLAN = f"# Hello\n\n## Action items\n- [ ] {ITEM}\n  - Tests: `cat docs/hello.txt`\n\n## Open questions\n\n## Learnings\n"


def test_build_step_lands_under_the_landlock_backend(agent, repo, fake_model, isolated_home):
    (repo / "docs").mkdir()
    (repo / "docs/.keep").write_text("")
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "cat docs/hello.txt", "testRetries": 1, "baselineTests": "build",
                                                  "timeouts": {"inactivitySeconds": 120, "runSeconds": 240}}))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "📝 plan: Hello")
    (isolated_home / ".ssh").mkdir(exist_ok=True)
    (isolated_home / ".ssh/id_ed25519").write_text("SECRET-KEY\n")
    fake_model.script([shell(f"cat {isolated_home}/.ssh/id_ed25519; echo pwned > .git/hooks/pre-commit; "
                             "echo hi > docs/hello.txt"), say("Wrote docs/hello.txt.")])
    args = ["build", "--provider", agent.name] + (["--model", agent.model] if agent.model else [])
    result = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-m", "gtd", *args], cwd=repo,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert result.returncode == 0, explain(result)
    assert "Landlock backend" in result.stderr, explain(result)
    assert git(repo, "log", "--format=%s").splitlines()[0] == f"🔨 build: {ITEM}"
    assert git(repo, "show", "HEAD:docs/hello.txt") == "hi\n"
    assert not (repo / ".git/hooks/pre-commit").exists()
    assert "SECRET-KEY" not in json.dumps([r.body for r in fake_model.main_requests()])


def test_the_model_key_stays_on_the_host_under_the_landlock_backend(agent, repo, fake_model, isolated_home,
                                                                    monkeypatch):
    # No namespace to put the credential gateway in: it listens on the host's loopback, the CLI's base URL
    # names its port, and the TCP rules allow it. The CLI holds a placeholder; the model gets the real key.
    import os

    key = "sk-real-" + os.urandom(12).hex()
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    (repo / ".gtdrc.json").write_text(json.dumps({"timeouts": {"inactivitySeconds": 120, "runSeconds": 240}}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    fake_model.script([shell("env | grep -i -e api_key -e base_url; echo DUMPED"), say("Looked.")])
    args = ["plan", "look around", "--provider", agent.name] + (["--model", agent.model] if agent.model else [])
    result = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-m", "gtd", *args], cwd=repo,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert "Landlock backend" in result.stderr, explain(result)
    main = fake_model.main_requests()
    assert main, explain(result)
    auth = {r.headers.get("x-api-key") or r.headers.get("authorization") or "" for r in main}
    assert auth and all(key in a for a in auth), auth
    sent_back = json.dumps([r.body for r in main])
    assert "DUMPED" in sent_back and "gtd-placeholder-" in sent_back, explain(result)
    assert key not in sent_back and key not in result.stdout + result.stderr


def test_a_claude_subscription_login_stays_on_the_host_under_the_landlock_backend(claude_agent, repo, fake_model,
                                                                                  isolated_home, monkeypatch):
    # No mount to lay the placeholder login over: gtd writes it (placeholders only) where claude looks.
    import os
    import time

    token = "sk-ant-oat01-" + os.urandom(12).hex()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    login = isolated_home / ".claude" / ".credentials.json"
    login.parent.mkdir(parents=True, exist_ok=True)
    login.write_text(json.dumps({"claudeAiOauth": {"accessToken": token, "refreshToken": "sk-ant-ort01-x",
                                                   "expiresAt": int((time.time() + 8 * 3600) * 1000),
                                                   "scopes": ["user:inference"], "subscriptionType": "max"}}))
    fake_model.script([shell("cat ~/.claude/.credentials.json \"$CLAUDE_CONFIG_DIR/.credentials.json\"; echo DUMPED"),
                       say("Looked.")])
    result = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-m", "gtd", "plan", "look around",
                             "--provider", "claude"], cwd=repo, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=300)
    assert "Landlock backend" in result.stderr, explain(result)
    main = fake_model.main_requests()
    assert main and {r.headers.get("authorization") for r in main} == {f"Bearer {token}"}, explain(result)
    sent_back = json.dumps([r.body for r in main])
    assert "DUMPED" in sent_back and "gtd-placeholder-" in sent_back and token not in sent_back


def test_claude_on_bedrock_is_signed_on_the_host_under_the_landlock_backend(claude_agent, repo, fake_model,
                                                                            isolated_home, monkeypatch):
    # The Bedrock route's placeholder goes to the gateway on the host's loopback; gtd signs there (SigV4).
    import os

    from fakemodel.cloud import sigv4_valid

    secret = "aws-secret-" + os.urandom(12).hex()
    for var, value in (("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_REGION", "eu-north-1"), ("AWS_ACCESS_KEY_ID", "AKIALANDLOCK"),
                       ("AWS_SECRET_ACCESS_KEY", secret), ("ANTHROPIC_BEDROCK_BASE_URL", fake_model.url)):
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    fake_model.script([shell("env | grep -i -e aws -e bedrock; echo DUMPED"), say("Looked.")])
    result = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-m", "gtd", "plan", "look around",
                             "--provider", "claude"], cwd=repo, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=300)
    assert "Landlock backend" in result.stderr, explain(result)
    invoked = [r for r in fake_model.requests if "/model/" in r.path]
    assert invoked, explain(result)
    for recorded in invoked:
        assert sigv4_valid("POST", recorded.raw_path, recorded.headers, recorded.raw, access_key="AKIALANDLOCK",
                           secret=secret, region="eu-north-1")[0], recorded.raw_path
    sent_back = json.dumps([r.body for r in fake_model.main_requests()])
    assert "DUMPED" in sent_back and "gtd-placeholder-" in sent_back and secret not in sent_back
    assert "AKIALANDLOCK" not in sent_back


@pytest.mark.parametrize("cli", ["opencode", "pi"])
def test_opencode_and_pi_on_bedrock_are_signed_on_the_host_under_the_landlock_backend(cli, repo, fake_model,
                                                                                      isolated_home, monkeypatch):
    # Their Bedrock endpoint in the config gtd writes is the gateway on the host's loopback (cli_cloud_routes.py).
    import os

    from agents import require_cli
    from fakemodel.cloud import sigv4_valid

    require_cli(cli, monkeypatch)
    secret = "aws-secret-" + os.urandom(12).hex()
    for var, value in (("AWS_REGION", "eu-north-1"), ("AWS_ACCESS_KEY_ID", "AKIALANDLOCK"),
                       ("AWS_SECRET_ACCESS_KEY", secret)):
        monkeypatch.setenv(var, value)
    for var in ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    own = (isolated_home / ".config/opencode/opencode.json" if cli == "opencode" else isolated_home / ".pi/agent/models.json")
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps({"provider": {"amazon-bedrock": {"options": {"endpoint": fake_model.url}}}} if cli == "opencode"
                              else {"providers": {"amazon-bedrock": {"baseUrl": fake_model.url}}}))
    fake_model.script([shell("env | grep -i -e aws -e bedrock; echo DUMPED"), say("Looked.")])
    result = subprocess.run([sys.executable, str(HARNESS), "--", sys.executable, "-m", "gtd", "plan", "look around",
                             "--provider", cli, "--model", "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0"],
                            cwd=repo, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert "Landlock backend" in result.stderr, explain(result)
    invoked = [r for r in fake_model.requests if r.path.endswith("/converse-stream")]
    assert invoked, explain(result)
    for recorded in invoked:
        assert sigv4_valid("POST", recorded.raw_path, recorded.headers, recorded.raw, access_key="AKIALANDLOCK",
                           secret=secret, region="eu-north-1")[0], recorded.raw_path
    sent_back = json.dumps([r.body for r in fake_model.main_requests()])
    assert "DUMPED" in sent_back and "AWS_BEARER_TOKEN_BEDROCK=gtd-placeholder-" in sent_back
    assert secret not in sent_back and "AKIALANDLOCK" not in sent_back
