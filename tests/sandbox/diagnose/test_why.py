"""`gtd sandbox why`: the rule that decides a write or a connection, read back from the policy."""

from __future__ import annotations

import json
import os
from pathlib import Path

from support import run_gtd

from gtd.config.schema import GtdConfig, Level, Phase
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.diagnose.why import why


def policy_for(repo: Path, **kw):
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"denyDomains": ["bad.test"],
                                                                          "allowDomains": ["*.corp.test:443"]}}}})
    return build_policy(config, workspace=repo, home=Path.home(), **kw)


def test_protected_path_names_the_protecting_rule(repo):
    verdict = why(policy_for(repo, phase=Phase.BUILD), ".git/hooks/pre-commit", repo)
    assert not verdict.allowed
    assert verdict.rule == str(repo / ".git")  # the whole git dir
    assert "protected" in verdict.reason


def test_workspace_file_is_writable_at_readwrite_but_not_in_plan(repo):
    assert why(policy_for(repo, phase=Phase.BUILD), "src/app.py", repo).allowed
    plan = why(policy_for(repo, phase=Phase.PLAN), "src/app.py", repo)
    assert not plan.allowed and "readonly.writablePaths" in plan.fix
    assert why(policy_for(repo, phase=Phase.PLAN), "TODO.md", repo, as_path=True).allowed
    # Not there yet, and `.md` is a top-level domain: still the plan's own file, not a host.
    assert not (repo / "TODO.md").exists()
    verdict = why(policy_for(repo, phase=Phase.PLAN), "TODO.md", repo)
    assert verdict.allowed and verdict.target == str(repo / "TODO.md")
    learn = why(policy_for(repo, phase=Phase.LEARN), "TODO.md", repo)
    assert not learn.allowed and learn.target == str(repo / "TODO.md")


def test_secret_is_hidden(repo):
    verdict = why(policy_for(repo, level=Level.NETWORK), str(Path.home() / ".ssh" / "id_ed25519"), repo)
    assert not verdict.allowed and verdict.rule == str(Path.home() / ".ssh")


def test_hosts_deny_wins_allow_names_rule_unknown_escalates(repo):
    policy = policy_for(repo, level=Level.NETWORK)
    assert why(policy, "pypi.org", repo).allowed
    denied = why(policy, "bad.test:443", repo)
    assert not denied.allowed and denied.rule == "bad.test"
    corp = why(policy, "git.corp.test", repo)
    assert corp.allowed and corp.rule == "*.corp.test:443"
    unknown = why(policy_for(repo, level=Level.READWRITE), "pypi.org", repo)
    assert not unknown.allowed and "asks you live" in unknown.reason
    assert "sandbox.levels.readwrite.allowDomains" in unknown.fix


def test_full_level_is_unrestricted(repo):
    assert why(policy_for(repo, level=Level.FULL), ".git/hooks/x", repo).allowed


def test_cli_json_and_exit_status(repo):
    (repo / ".gtdrc.json").write_text('{"provider": "scripted"}')
    blocked = run_gtd("sandbox", "why", ".git/config", "--phase", "build", "--json", cwd=repo)
    assert blocked.returncode == 1
    data = json.loads(blocked.stdout)
    assert data["allowed"] is False and data["rule"] == str(repo / ".git")
    allowed = run_gtd("sandbox", "why", "README.md", "--phase", "build", cwd=repo)
    assert allowed.returncode == 0 and allowed.stdout.startswith("ALLOWED")


def test_loopback_is_the_sandboxs_own_unless_a_host_loopback_port_forwards_it(repo):
    v = why(policy_for(repo, level=Level.READWRITE), "127.0.0.1:5432", repo)
    assert v.allowed and "sandbox's own loopback" in v.reason and "sandbox.levels.readwrite.hostLoopbackPorts" in v.reason
    config = GtdConfig.model_validate({"sandbox": {"levels": {"readonly": {"hostLoopbackPorts": [5432]}}}})
    v = why(build_policy(config, workspace=repo, home=Path.home(), level=Level.READWRITE), "localhost:5432", repo)
    assert v.allowed and v.rule == "hostLoopbackPorts: 5432" and "host's loopback" in v.reason


def test_a_host_refused_below_network_says_whether_running_at_network_would_allow_it(repo, monkeypatch):
    for key in [k for k in os.environ if k.startswith(("PIP_", "npm_config_", "NPM_CONFIG_"))]:
        monkeypatch.delenv(key)  # the machine's own registry settings stay out
    registry = run_gtd("sandbox", "why", "pypi.org:443", "--level", "readwrite", cwd=repo)
    assert registry.returncode == 1
    assert "or run at level network (`--level network`" in registry.stdout, registry.stdout
    other = run_gtd("sandbox", "why", "example.org:443", "--level", "readwrite", cwd=repo)
    assert "level network does not allow it either" in other.stdout and "--level network" not in other.stdout
    # The person's own registry on this machine's loopback is forwarded at network (not a hostLoopbackPorts entry).
    Path(os.environ["HOME"], ".npmrc").write_text("registry=http://127.0.0.1:4873/\n")
    mine = run_gtd("sandbox", "why", "127.0.0.1:4873", "--phase", "build", cwd=repo)
    assert "run at level network (`--level network`), where it is forwarded" in mine.stdout, mine.stdout
    assert "~/.npmrc registry" in mine.stdout and "hostLoopbackPorts" not in mine.stdout
