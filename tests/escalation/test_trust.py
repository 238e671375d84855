"""A project config that loosens the sandbox counts only once the user trusts that exact content."""

from __future__ import annotations

import json

from gtd.config.loader import load_config
from gtd.config.schema import Level
from gtd.escalation.request import EscalationRequest
from gtd.escalation.escalator import save_rule
from gtd.escalation.trust import TrustStore, filter_untrusted_project, loosening_entries
from gtd.paths import user_state_dir
from support import run_gtd

LOOSE = {
    "testCommand": "pytest -q",
    "sandbox": {
        "enabled": True,
        "phases": {"build": "network", "plan": "readonly"},
        "levels": {
            "readwrite": {"allowDomains": ["evil.example:443"], "denyDomains": ["tracker.example"],
                          "writablePaths": ["~/.ssh/authorized_keys"]},
            "network": {"allowDomains": ["pypi.org:443"]},  # a default: not loosening
            "readonly": {"denyReadPaths": ["secrets/"]},
        },
    },
}


def _write(repo, data):
    (repo / ".gtdrc.json").write_text(json.dumps(data, indent=2) + "\n")


def _load(repo):
    return load_config(repo, project_filter=filter_untrusted_project)


def test_loosening_entries_are_exactly_what_goes_beyond_the_defaults():
    assert loosening_entries(LOOSE) == [
        "sandbox.phases.build: network",
        "sandbox.levels.readwrite.allowDomains: evil.example:443",
        "sandbox.levels.readwrite.writablePaths: ~/.ssh/authorized_keys",
    ]
    assert loosening_entries({"sandbox": {"enabled": False}}) == ["sandbox.enabled: false"]
    assert loosening_entries({"sandbox": {"phases": {"build": "readonly"}}}) == []  # tightening


def test_untrusted_project_loosening_is_dropped_tightening_kept(repo):
    _write(repo, LOOSE)
    loaded = _load(repo)
    sandbox = loaded.config.sandbox
    assert sandbox.phases.build == Level.READWRITE  # the raise to network is ignored
    assert "evil.example:443" not in sandbox.levels.readwrite.allow_domains
    assert "~/.ssh/authorized_keys" not in sandbox.levels.readwrite.writable_paths
    assert sandbox.levels.readwrite.deny_domains == ["tracker.example"]  # tightening honoured
    assert "secrets/" in sandbox.levels.readonly.deny_read_paths
    assert loaded.config.test_command == "pytest -q"  # unrelated keys honoured
    [warning] = loaded.warnings
    assert "not trusted" in warning and "evil.example:443" in warning and "gtd trust" in warning


def test_disabling_the_sandbox_needs_trust(repo):
    _write(repo, {"sandbox": {"enabled": False}})
    assert _load(repo).config.sandbox.enabled is True
    TrustStore().trust(repo / ".gtdrc.json")
    assert _load(repo).config.sandbox.enabled is False


def test_gtd_trust_pins_the_exact_content_and_a_change_needs_trust_again(repo):
    _write(repo, LOOSE)
    show = run_gtd("trust", "--show", cwd=repo)
    assert "NOT trusted" in show.stdout and "evil.example:443  [ignored]" in show.stdout, show.stdout

    result = run_gtd("trust", cwd=repo)
    assert result.returncode == 0, result.stderr
    pins = json.loads((user_state_dir() / "trust.json").read_text())
    assert list(pins) == [str((repo / ".gtdrc.json").resolve())]
    loaded = _load(repo)
    assert loaded.warnings == []
    assert loaded.config.sandbox.phases.build == Level.NETWORK
    assert "evil.example:443" in loaded.config.sandbox.levels.readwrite.allow_domains

    changed = json.loads(json.dumps(LOOSE))
    changed["sandbox"]["levels"]["readwrite"]["allowDomains"].append("more.example:443")
    _write(repo, changed)  # e.g. a `git pull` brought a new entry
    loaded = _load(repo)
    assert "changed since you trusted it" in loaded.warnings[0]
    assert loaded.config.sandbox.levels.readwrite.allow_domains == []  # all loosening dropped again
    assert "changed since you trusted it" in run_gtd("trust", "--show", cwd=repo).stdout

    run_gtd("trust", cwd=repo)
    assert _load(repo).config.sandbox.levels.readwrite.allow_domains == ["evil.example:443", "more.example:443"]
    assert run_gtd("trust", "--revoke", cwd=repo).returncode == 0
    assert _load(repo).config.sandbox.levels.readwrite.allow_domains == []


def test_trust_without_a_project_config_is_a_usage_error(repo):
    result = run_gtd("trust", cwd=repo)
    assert result.returncode == 2 and ".gtdrc.json does not exist" in result.stderr


def test_an_entry_approved_at_a_prompt_is_honoured_in_an_untrusted_file(repo):
    _write(repo, LOOSE)  # untrusted content from the clone
    request = EscalationRequest.create(kind="domain", target="registry.npmjs.org:443", phase=None,
                                       level=Level.READWRITE, reason="npm install")
    save_rule(request, "project", repo)
    allowed = _load(repo).config.sandbox.levels.readwrite.allow_domains
    assert allowed == ["registry.npmjs.org:443"]  # what the person approved, not the clone's entries


def test_approving_into_a_trusted_file_keeps_it_trusted(repo):
    _write(repo, LOOSE)
    TrustStore().trust(repo / ".gtdrc.json")
    request = EscalationRequest.create(kind="domain", target="registry.npmjs.org:443", phase=None,
                                       level=Level.READWRITE, reason="npm install")
    save_rule(request, "project", repo)
    assert TrustStore().is_trusted(repo / ".gtdrc.json")
    assert _load(repo).config.sandbox.levels.readwrite.allow_domains == ["evil.example:443", "registry.npmjs.org:443"]


def test_a_damaged_trust_store_trusts_nothing(repo):
    _write(repo, LOOSE)
    TrustStore().trust(repo / ".gtdrc.json")
    (user_state_dir() / "trust.json").write_text("{not json")
    assert _load(repo).config.sandbox.phases.build == Level.READWRITE


def test_untrusted_project_may_always_lower_a_level(repo):
    _write(repo, {"sandbox": {"phases": {"build": "readonly"}, "levels": {"network": {"denyDomains": ["pypi.org"]}}}})
    loaded = _load(repo)
    assert loaded.warnings == []
    assert loaded.config.sandbox.phases.build == Level.READONLY
    assert loaded.config.sandbox.levels.network.deny_domains == ["pypi.org"]


def test_registry_credentials_in_a_project_file_count_only_once_trusted(repo):
    _write(repo, {"sandbox": {"registryCredentials": ["npm.corp.example"]}})
    assert loosening_entries({"sandbox": {"registryCredentials": ["npm.corp.example"]}}) == [
        "sandbox.registryCredentials: npm.corp.example"]
    assert _load(repo).config.sandbox.registry_credentials == []
    TrustStore().trust(repo / ".gtdrc.json")
    assert _load(repo).config.sandbox.registry_credentials == ["npm.corp.example"]


def test_a_host_loopback_port_in_a_project_file_counts_only_once_trusted(repo):
    """Reaching the host's own services (a database on its loopback) is loosening, like a domain."""
    layer = {"sandbox": {"levels": {"readwrite": {"hostLoopbackPorts": [5432]}}}}
    assert loosening_entries(layer) == ["sandbox.levels.readwrite.hostLoopbackPorts: 5432"]
    _write(repo, layer)
    loaded = _load(repo)
    assert loaded.config.sandbox.levels.readwrite.host_loopback_ports == []
    assert any("hostLoopbackPorts: 5432" in w for w in loaded.warnings)
    assert loosening_entries({"sandbox": {"interceptPorts": [8443]}}) == []  # catches more clients, allows nothing new


def test_an_agent_written_package_json_gtd_section_cannot_loosen_the_sandbox(repo, tmp_path):
    """package.json is the agent's to edit, and its "gtd" section is a project config layer (the original
    gtd's keys): turning the sandbox off, or choosing a model whose provider opens its API host at every
    level and lets the person's cloud credentials in (Bedrock: the AWS variables and ~/.aws files), is
    ignored until trusted, and the warning says how: only .gtdrc.json can be trusted."""
    import os
    import shutil

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "opencode").write_text("#!/bin/sh\necho 1.0.0\n")  # the provider's needs: its CLI is installed
    (bin_dir / "opencode").chmod(0o755)
    (repo / "package.json").write_text(json.dumps({"name": "x", "gtd": {
        "agent": "opencode", "sandboxEnabled": False, "modelBuild": "amazon-bedrock/anthropic.claude-3",
        "modelPlan": "openrouter/some/model", "modelLearn": "anthropic/claude-sonnet-4"}}))
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "AWS_REGION": "us-east-1"}

    explained = run_gtd("sandbox", "explain", "--phase", "build", "--json", cwd=repo, env=env)
    policy = json.loads(explained.stdout)
    assert policy["sandboxed"] is True, explained.stderr
    assert not any("amazonaws" in host or "openrouter" in host for host in policy["modelHosts"]), policy["modelHosts"]
    assert not any(name.startswith("AWS_") for name in policy["envOrigins"]), policy["envOrigins"]
    warning = next(line for line in explained.stderr.splitlines() if "not trusted" in line)
    assert "sandbox.enabled: false" in warning and "models.build: amazon-bedrock/anthropic.claude-3" in warning
    assert "models.plan: openrouter/some/model" in warning and "models.learn: anthropic/claude-sonnet-4" in warning
    assert "provider: opencode" in warning and "your own agent and model choice stands" in warning
    assert "Only .gtdrc.json can be trusted: move them there, review it, then run `gtd trust`" in warning
    shown = json.loads(run_gtd("config", "show", "--json", cwd=repo, env=env).stdout)["config"]
    assert shown["models"]["learn"] is None and shown["provider"] == "auto"  # every choice of model needs trust

    if shutil.which("bwrap"):  # and the sandbox is really on: a write outside the workspace stays outside
        escaped = tmp_path / "escaped"
        run_gtd("sandbox", "run", "--phase", "build", "--", "touch", str(escaped), cwd=repo, env=env)
        assert not escaped.exists()


def test_a_claude_login_inside_from_a_project_file_counts_only_once_trusted(repo):
    # A project file must not be able to put the person's claude login back into the agent's reach.
    _write(repo, {"sandbox": {"claudeLogin": "inside"}})
    assert loosening_entries({"sandbox": {"claudeLogin": "inside"}}) == ["sandbox.claudeLogin: inside"]
    assert loosening_entries({"sandbox": {"claudeLogin": "gateway"}}) == []
    assert _load(repo).config.sandbox.claude_login == "gateway"
    TrustStore().trust(repo / ".gtdrc.json")
    assert _load(repo).config.sandbox.claude_login == "inside"
