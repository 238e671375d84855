"""plan -> build -> learn with each real agent CLI in a HOME that has been used: the person's own login
and state for that CLI already there (issue 21). A Claude subscription login (`~/.claude/.credentials.json`,
written by `claude` + /login) stopped every claude run before the agent started; the suite's other tests
all ran in a fresh HOME with an API key, so none of them noticed.

Each test runs the three phases through the real `gtd` against the fake model server, inside the real
sandbox, and checks which credential reached the model."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from fakemodel.server import say, shell, tool
from support import explain, git, run_gtd

pytestmark = pytest.mark.e2e

PLAN = """# Hello file

## Action items
- [ ] Create hello.txt saying hi
  - Tests: `cat hello.txt` succeeds

## Open questions

## Learnings
- Keep files small.
"""
OAUTH_TOKEN = "sk-ant-oat01-fake-subscription-token"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def claude_login(home: Path, *, expires_in: float = 8 * 3600) -> Path:
    """What `claude` + /login leaves: the OAuth tokens, an access token that expires in hours."""
    return write(home / ".claude" / ".credentials.json", json.dumps({"claudeAiOauth": {
        "accessToken": OAUTH_TOKEN, "refreshToken": "sk-ant-ort01-fake-refresh",
        "expiresAt": int((time.time() + expires_in) * 1000), "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "max"}}))


def lived_in_claude(home: Path) -> None:
    """A ~/.claude a person has used for weeks, beside the login."""
    write(home / ".claude" / "settings.json", json.dumps({"model": "opus", "permissions": {"allow": ["Bash(ls:*)"]}}))
    write(home / ".claude" / "settings.local.json", json.dumps({"env": {"FOO": "bar"}}))
    write(home / ".claude" / "CLAUDE.md", "# my own instructions\n")
    write(home / ".claude" / "projects" / "-home-me-proj" / "0b1c.jsonl", '{"type":"user"}\n')
    write(home / ".claude" / "todos" / "0b1c-agent-0b1c.json", "[]\n")
    write(home / ".claude" / "statsig" / "statsig.stable_id.123", '"abc"\n')
    write(home / ".claude" / "shell-snapshots" / "snapshot-bash-1.sh", "# snapshot\n")
    write(home / ".claude.json", json.dumps({"numStartups": 41, "hasCompletedOnboarding": True,
                                             "projects": {"/home/me/proj": {"allowedTools": []}}}))


def lived_in_opencode(home: Path) -> None:
    write(home / ".local" / "share" / "opencode" / "auth.json",
          json.dumps({"anthropic": {"type": "api", "key": "sk-ant-person-key"}}))
    write(home / ".local" / "share" / "opencode" / "storage" / "session" / "info" / "ses_1.json", "{}\n")
    write(home / ".config" / "opencode" / "opencode.json", json.dumps({"$schema": "https://opencode.ai/config.json",
                                                                      "autoupdate": False}))
    write(home / ".local" / "state" / "opencode" / "model.json", json.dumps({"recent": []}))


def lived_in_pi(home: Path) -> None:
    write(home / ".pi" / "agent" / "auth.json", json.dumps({"anthropic": {"type": "api_key", "key": "sk-ant-person"}}))
    write(home / ".pi" / "agent" / "settings.json", json.dumps({"defaultThinkingLevel": "off"}))
    write(home / ".pi" / "agent" / "sessions" / "--home-me-proj--" / "s.jsonl", '{"type":"session"}\n')


def run_the_workflow(agent, repo: Path, fake_model) -> None:
    """plan, build and learn, each through the real CLI, each checked."""
    t = agent.files
    todo, agents_md = str(repo / "TODO.md"), str(repo / "AGENTS.md")
    extra = ["--provider", agent.name, *(["--model", agent.model] if agent.model else [])]
    # the baseline (`cat hello.txt` before the agent writes it) is red by design: build on red
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "cat hello.txt", "testRetries": 1,
                                                  "baselineTests": "build"}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")

    fake_model.script([tool(t.read, {t.path: todo}), tool(t.write, {t.path: todo, "content": PLAN}), say("Planned.")])
    result = run_gtd("plan", "make a hello file", *extra, cwd=repo, timeout=300)
    assert result.returncode == 0, explain(result)
    assert git(repo, "log", "-1", "--format=%s").startswith("📝 plan: Hello file"), explain(result)

    fake_model.script([shell("echo hi > hello.txt"), say("Created hello.txt.")])
    result = run_gtd("build", *extra, cwd=repo, timeout=300)
    assert result.returncode == 0, explain(result)
    assert git(repo, "show", "HEAD:hello.txt") == "hi\n", explain(result)

    fake_model.script([tool(t.read, {t.path: agents_md}), tool(t.write, {t.path: agents_md, "content": "# Notes\n- Keep files small.\n"}), say("Merged.")])
    result = run_gtd("learn", *extra, cwd=repo, timeout=300)
    assert result.returncode == 0, explain(result)
    assert "📚 learn: Hello file" in git(repo, "log", "--format=%s"), explain(result)
    assert "Keep files small" in git(repo, "log", "-p", "--format=%s", "--", "AGENTS.md"), explain(result)


def test_claude_with_a_subscription_login_in_a_lived_in_home(claude_agent, repo, fake_model, isolated_home, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")  # the login file is the only credential
    claude_login(isolated_home)
    lived_in_claude(isolated_home)
    run_the_workflow(claude_agent, repo, fake_model)
    sent = {r.headers.get("authorization") for r in fake_model.main_requests()}
    assert sent == {f"Bearer {OAUTH_TOKEN}"}, sent  # the model got the subscription's token, nothing else
    # The person's own ~/.claude is unchanged by the runs (gtd's claude has a config dir of its own).
    assert json.loads((isolated_home / ".claude.json").read_text())["numStartups"] == 41
    assert (isolated_home / ".claude" / ".credentials.json").read_text().count(OAUTH_TOKEN) == 1


def test_claude_login_link_left_by_an_earlier_gtd_is_replaced(claude_agent, repo, fake_model, isolated_home, monkeypatch):
    """gtd up to now linked the login into its config dir: that link made bwrap protect the whole dir
    read-only. A HOME that still has it runs too, and the link is gone afterwards."""
    from gtd.providers.agent_dirs import agent_dir

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    login = claude_login(isolated_home)
    link = agent_dir("claude", repo) / ".credentials.json"  # the project's own dir (issue 23)
    link.parent.mkdir(parents=True)
    link.symlink_to(login)
    fake_model.script([shell("echo hi > hello.txt"), say("done")])
    result = run_gtd("sandbox", "run", "--level", "readwrite", "--", "true", cwd=repo)  # the provider's mounts
    assert result.returncode == 0, explain(result)
    run_the_workflow(claude_agent, repo, fake_model)
    assert not link.is_symlink()


def test_expired_subscription_login_stops_before_the_agent_with_the_fix(claude_agent, repo, fake_model, isolated_home,
                                                                         monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("GTD_CLAUDE_TOKEN_URL", "http://127.0.0.1:9/v1/oauth/token")  # gtd's refresh: nothing answers
    claude_login(isolated_home, expires_in=-60)
    result = run_gtd("plan", "make a hello file", "--provider", "claude", cwd=repo, timeout=300)
    assert result.returncode != 0
    assert "access token expired" in result.stderr and "claude -p hi" in result.stderr, explain(result)
    assert fake_model.main_requests() == []  # the agent never started


def test_each_cli_runs_with_its_own_existing_user_state(agent, repo, fake_model, isolated_home):
    """The person's own state for every CLI in HOME (logins, settings, sessions): gtd's runs work beside it
    and leave it as it was."""
    claude_login(isolated_home)
    lived_in_claude(isolated_home)
    lived_in_opencode(isolated_home)
    lived_in_pi(isolated_home)
    before = {p: p.read_bytes() for p in isolated_home.rglob("*") if p.is_file() and _persons(p, isolated_home)}
    run_the_workflow(agent, repo, fake_model)
    after = {p: p.read_bytes() for p in before if p.is_file()}
    assert after == before


def _persons(path: Path, home: Path) -> bool:
    """The person's own files (not gtd's state and agent dirs, which live under XDG data/state)."""
    rel = path.relative_to(home).parts
    return rel[:3] != (".local", "share", "gtd") and rel[:3] != (".local", "state", "gtd")


def test_doctor_probes_with_the_chosen_clis_start(claude_agent, repo, isolated_home, monkeypatch):
    """doctor's sandbox probe (provider auto: claude, the first installed) prepares and mounts what its runs do: a start that cannot work
    for claude fails there first, instead of doctor saying the sandbox starts."""
    import json as _json

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("GTD_CLAUDE_TOKEN_URL", "http://127.0.0.1:9/v1/oauth/token")  # gtd's refresh: nothing answers
    claude_login(isolated_home)
    rows = {c["name"]: c for c in _json.loads(run_gtd("doctor", "--json", cwd=repo)
                                              .stdout)["checks"]}
    assert rows["sandbox start"]["ok"] and "claude's mounts" in rows["sandbox start"]["detail"], rows["sandbox start"]
    claude_login(isolated_home, expires_in=-60)
    rows = {c["name"]: c for c in _json.loads(run_gtd("doctor", "--json", cwd=repo)
                                              .stdout)["checks"]}
    assert not rows["sandbox start"]["ok"] and "access token expired" in rows["sandbox start"]["detail"]


def test_a_fifo_as_the_login_file_never_blocks_the_check(isolated_home, monkeypatch):
    """gtd reads the login on the host before every claude run: a FIFO there must not hang it."""
    from gtd.providers.claude import check_login_fresh

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (isolated_home / ".claude").mkdir()
    os.mkfifo(isolated_home / ".claude" / ".credentials.json")
    check_login_fresh()  # returns (the CLI reports an unusable login itself); a blocking open would hang here
