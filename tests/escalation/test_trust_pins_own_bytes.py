"""A project approval pins only the bytes gtd wrote itself (issue 22, class 1).

The agent runs while gtd writes an approved rule into .gtdrc.json: it may create the file just before
gtd reads it, or swap it the moment gtd's write is done. Neither version may become trusted; a file
that turns a protection layer off (`sandbox.enabled: false`) stays untrusted until `gtd trust`.
The agent's moves are made at exactly the point in gtd's sequence where the race puts them.
"""

from __future__ import annotations

import json

import pytest

from gtd.config import writer
from gtd.config.loader import load_config
from gtd.config.schema import Level
from gtd.escalation.escalator import save_rule
from gtd.escalation.request import EscalationRequest
from gtd.escalation.trust import TrustStore, content_digest, filter_untrusted_project, layer_switches, loosening_entries

AGENTS = json.dumps({"sandbox": {"enabled": False, "phases": {"build": "full"}}}) + "\n"


def _request() -> EscalationRequest:
    return EscalationRequest.create(kind="domain", target="registry.npmjs.org:443", phase=None,
                                    level=Level.READWRITE, reason="npm install")


def _load(repo):
    return load_config(repo, project_filter=filter_untrusted_project)


def test_a_file_swapped_right_after_gtds_write_is_not_pinned(repo, monkeypatch):
    """The repository has no .gtdrc.json; "save to project" creates it, and the agent replaces it
    before gtd records trust. The pin is the digest of gtd's own bytes, so the agent's file is not trusted."""
    real_write = writer.write_config_text
    written: list[str] = []

    def write_then_agent_swaps(path, text, *, workspace=None):
        real_write(path, text, workspace=workspace)
        written.append(text)
        (repo / ".gtdrc.json").write_text(AGENTS)  # the agent, between gtd's write and its trust record

    monkeypatch.setattr(writer, "write_config_text", write_then_agent_swaps)
    save_rule(_request(), "project", repo)

    store = TrustStore()
    assert store.pinned(repo / ".gtdrc.json") == content_digest(written[0].encode())  # gtd's bytes, not a re-read
    assert not store.is_trusted(repo / ".gtdrc.json")
    loaded = _load(repo)
    assert loaded.config.sandbox.enabled is True
    assert loaded.config.sandbox.phases.build == Level.READWRITE
    assert any("sandbox.enabled: false" in w and "gtd trust" in w for w in loaded.warnings), loaded.warnings


def test_a_file_the_agent_creates_just_before_gtd_reads_it_is_not_pinned(repo, monkeypatch):
    """No file when the approval starts; the agent creates one before gtd's edit reads it. gtd adds the
    rule to that file but pins nothing, and says why."""
    real_read = writer.read_config_text

    def agent_creates_then_read(path, *, workspace=None):
        (repo / ".gtdrc.json").write_text(AGENTS)
        return real_read(path, workspace=workspace)

    monkeypatch.setattr(writer, "read_config_text", agent_creates_then_read)
    saved = save_rule(_request(), "project", repo)

    assert TrustStore().pinned(repo / ".gtdrc.json") is None
    config = _load(repo).config
    assert config.sandbox.enabled is True
    assert config.sandbox.levels.readwrite.allow_domains == ["registry.npmjs.org:443"]  # the approved rule counts
    assert saved.warning and "not trusted" in saved.warning and "sandbox.enabled: false" in saved.warning
    assert "gtd trust" in saved.warning


def test_a_trusted_file_the_agent_changed_is_not_pinned_again(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"phases": {"build": "network"}}}) + "\n")
    store = TrustStore()
    store.trust(repo / ".gtdrc.json")
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"enabled": False, "phases": {"build": "network"}}}) + "\n")

    saved = save_rule(_request(), "project", repo)

    assert not store.is_trusted(repo / ".gtdrc.json")
    assert "changed since you trusted it" in saved.warning
    assert _load(repo).config.sandbox.enabled is True


def test_trust_is_decided_on_the_bytes_the_load_read(repo, monkeypatch):
    """The loader read the agent's version; a re-read for the trust check finds the trusted version put back.
    The values in use are the agent's, so they must not count as trusted."""
    trusted = json.dumps({"sandbox": {"phases": {"build": "network"}}}) + "\n"
    (repo / ".gtdrc.json").write_text(trusted)
    TrustStore().trust(repo / ".gtdrc.json")
    (repo / ".gtdrc.json").write_text(AGENTS)
    real_pinned = TrustStore.pinned

    def agent_puts_it_back(self, path):
        (repo / ".gtdrc.json").write_text(trusted)  # after the load read the file, before trust is decided
        return real_pinned(self, path)

    monkeypatch.setattr(TrustStore, "pinned", agent_puts_it_back)
    config = _load(repo).config
    assert config.sandbox.enabled is True
    assert config.sandbox.phases.build == Level.READWRITE


@pytest.mark.parametrize("switch", layer_switches())
def test_turning_any_layer_off_counts_as_loosening(repo, switch):
    assert "sandbox.enabled" in layer_switches()
    *parents, last = switch.split(".")
    values: dict = {}
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = False
    assert f"{switch}: false" in loosening_entries(values)
    (repo / ".gtdrc.json").write_text(json.dumps(values))
    loaded = _load(repo)
    node = loaded.values
    for part in switch.split("."):
        node = node[part]
    assert node is True
