"""Trust pinning through the real CLI: a cloned .gtdrc.json that loosens the sandbox is ignored (and
said so) until `gtd trust`; any change needs trust again; tightening always applies."""

from __future__ import annotations

import json

import pytest

from support import git, run_gtd
from gtd.escalation.pending import PendingStore
from gtd.paths import user_config_file

pytestmark = pytest.mark.bwrap


def _project(repo, levels):
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"levels": {"readwrite": levels}}}, indent=2) + "\n")
    git(repo, "add", ".gtdrc.json")
    git(repo, "commit", "-qm", "project config from the team")


def _fetch(repo, target):
    return run_gtd("sandbox", "run", "--level", "readwrite", "--", "curl", "--noproxy", "", "-sS", "--max-time", "30",
                   "-w", " HTTP=%{http_code}\\n", f"http://{target}/", cwd=repo)


def _reached(result):
    return result.returncode == 0 and "REGISTRY-OK HTTP=200" in result.stdout


def _untrusted_warning(result, repo):
    lines = [line for line in result.stderr.splitlines() if "not trusted" in line]
    return lines and str(repo / ".gtdrc.json") in lines[0] and "gtd trust" in lines[0]


def test_a_loosening_entry_counts_only_after_gtd_trust_and_again_after_a_change(repo, registry):
    _project(repo, {"allowDomains": [registry]})

    ignored = _fetch(repo, registry)
    assert _untrusted_warning(ignored, repo), ignored.stderr
    assert ignored.returncode == 4 and not _reached(ignored)  # not allowed: an escalation, headless denied
    assert "NOT trusted" in run_gtd("trust", "--show", cwd=repo).stdout

    trusted = run_gtd("trust", cwd=repo)
    assert trusted.returncode == 0 and f"trusting: sandbox.levels.readwrite.allowDomains: {registry}" in trusted.stderr
    ok = _fetch(repo, registry)
    assert _reached(ok), ok.stderr
    assert "not trusted" not in ok.stderr
    show = run_gtd("trust", "--show", cwd=repo).stdout
    assert ": trusted" in show and f"{registry}  [honoured]" in show

    _project(repo, {"allowDomains": [registry, "other.example:443"]})  # e.g. a `git pull`
    changed = _fetch(repo, registry)
    assert _untrusted_warning(changed, repo) and "changed since you trusted it" in changed.stderr
    assert changed.returncode == 4 and not _reached(changed)

    assert run_gtd("trust", cwd=repo).returncode == 0
    assert _reached(_fetch(repo, registry))

    assert run_gtd("trust", "--revoke", cwd=repo).returncode == 0
    revoked = _fetch(repo, registry)
    assert _untrusted_warning(revoked, repo) and revoked.returncode == 4


def test_tightening_applies_without_trust_and_is_not_escalated(repo, registry):
    user = user_config_file()
    user.write_text(user.read_text().replace('"]', f'", "{registry}"]'))  # the user allows the name too
    assert _reached(_fetch(repo, registry))

    _project(repo, {"denyDomains": ["localhost"]})
    refused = _fetch(repo, registry)
    assert "not trusted" not in refused.stderr
    assert not _reached(refused) and refused.returncode != 4  # a deny rule decides: nothing to ask
    assert f"refused network {registry}" in refused.stderr
    assert PendingStore(repo).list() == []
    assert "nothing in it loosens the sandbox" in run_gtd("trust", "--show", cwd=repo).stdout


def test_gtd_trust_pins_exactly_what_it_showed(repo, monkeypatch):
    # A .gtdrc.json the agent created during its run is not read-only (only one present at its start is):
    # rewritten between `gtd trust` showing its entries and pinning its digest, the pin covered content
    # nobody was shown (here: a second allowed domain).
    from gtd.cli.escalation_cmds import trust
    from gtd.escalation import trust as trust_module

    shown = {"sandbox": {"levels": {"readwrite": {"allowDomains": ["mirror.example.com"]}}}}
    swapped = {"sandbox": {"levels": {"readwrite": {"allowDomains": ["mirror.example.com", "evil.example"]}}}}
    (repo / ".gtdrc.json").write_text(json.dumps(shown))
    real = trust_module.loosening_entries

    def then_swap(values):
        entries = real(values)
        (repo / ".gtdrc.json").write_text(json.dumps(swapped))
        return entries

    monkeypatch.setattr(trust_module, "loosening_entries", then_swap)
    trust(show=False, revoke=False, directory=repo)
    monkeypatch.setattr(trust_module, "loosening_entries", real)
    assert not trust_module.TrustStore().is_trusted(repo / ".gtdrc.json")
    (repo / ".gtdrc.json").write_text(json.dumps(shown))
    assert trust_module.TrustStore().is_trusted(repo / ".gtdrc.json")
