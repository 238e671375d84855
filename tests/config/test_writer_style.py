"""Saving a rule keeps the file's style, and a 🔐 commit holds only the rule gtd added."""

from __future__ import annotations

import json

from support import git

from gtd.config.files import compact_array_keys, dump_json
from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import save_rule
from gtd.escalation.request import EscalationRequest
from gtd.escalation.trust import TrustStore


def test_one_line_arrays_stay_on_one_line():
    text = '{\n  "sandbox": {"levels": {"network": {"allowDomains": ["a.example:443"]}}},\n  "x": [\n    1\n  ]\n}\n'
    data = json.loads(text)
    data["sandbox"]["levels"]["network"]["allowDomains"].append("b.example:443")
    out = dump_json(data, compact_keys=compact_array_keys(text))
    assert '"allowDomains": ["a.example:443", "b.example:443"]' in out
    assert '"x": [\n    1\n  ]' in out
    assert json.loads(out) == data


def test_approval_commit_holds_only_the_rule_not_the_persons_other_edits(repo):
    config = repo / ".gtdrc.json"
    config.write_text('{\n  "testCommand": "make test",\n  "sandbox": {"levels": {"network": {"allowDomains": ["a.example:443"]}}}\n}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    # the person's own, uncommitted edit to the same file
    config.write_text(config.read_text().replace('"make test"', '"make check"'))
    request = EscalationRequest.create(kind="domain", target="b.example:443", phase=Phase.BUILD, level=Level.NETWORK,
                                       reason="test")
    saved = save_rule(request, "project", repo)
    assert saved.commit and "not committed" not in (saved.warning or "")
    assert "a.example:443" in saved.warning  # the untrusted entry beside the rule: said, not pinned
    committed = git(repo, "show", "HEAD:.gtdrc.json")
    assert '"make test"' in committed and "b.example:443" in committed
    assert '"allowDomains": ["a.example:443", "b.example:443"]' in committed  # compact stays compact
    on_disk = config.read_text()
    assert '"make check"' in on_disk and "b.example:443" in on_disk
    assert git(repo, "log", "-1", "--format=%s").startswith("🔐")
    assert git(repo, "status", "--porcelain").strip() == "M .gtdrc.json"  # the person's edit, still theirs


HAND_FORMATTED = """{
    "testCommand": "make test",   "timeouts": {"inactivitySeconds": 60},

    "sandbox": {"levels": {"network": {"allowDomains": ["a.example:443"]}},
                "phases": {"build": "readwrite"}},
    "models": {
        "build": "claude-sonnet-4-5"
    }
}"""


def _approve(repo, request) -> tuple[str, str]:
    config = repo / ".gtdrc.json"
    config.write_text(HAND_FORMATTED)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "config")
    TrustStore().trust(config)  # the person's own file, reviewed: the approval keeps it trusted (issue 22)
    saved = save_rule(request, "project", repo)
    assert saved.commit and saved.warning is None
    return config.read_text(), git(repo, "show", "HEAD:.gtdrc.json")


def test_a_domain_approval_inserts_the_rule_and_changes_nothing_else(repo):
    """Issue 24: one rule added to a hand-formatted .gtdrc.json, byte for byte the rest (file and 🔐 commit)."""
    request = EscalationRequest.create(kind="domain", target="b.example:443", phase=Phase.BUILD, level=Level.NETWORK,
                                       reason="test")
    on_disk, committed = _approve(repo, request)
    expected = HAND_FORMATTED.replace('["a.example:443"]', '["a.example:443", "b.example:443"]')
    assert on_disk == expected and committed == expected


def test_a_rule_under_a_new_key_is_one_inserted_member(repo):
    request = EscalationRequest.create(kind="domain", target="b.example:443", phase=Phase.BUILD,
                                       level=Level.READWRITE, reason="test")
    on_disk, committed = _approve(repo, request)
    expected = HAND_FORMATTED.replace('{"network": {"allowDomains": ["a.example:443"]}}',
                                      '{"network": {"allowDomains": ["a.example:443"]}, '
                                      '"readwrite": {"allowDomains": ["b.example:443"]}}')
    assert on_disk == expected and committed == expected


def test_a_level_approval_replaces_only_the_value(repo):
    request = EscalationRequest.create(kind="level", target="network", phase=Phase.BUILD, level=Level.READWRITE,
                                       requested_level=Level.NETWORK, reason="test")
    on_disk, committed = _approve(repo, request)
    expected = HAND_FORMATTED.replace('"phases": {"build": "readwrite"}', '"phases": {"build": "network"}')
    assert on_disk == expected and committed == expected


def test_in_place_edits_of_one_per_line_containers_follow_their_siblings():
    from gtd.config.json_edit import edit

    text = '{\n    "a": [\n        "x"\n    ],\n    "b": {\n        "c": 1\n    }\n}\n'
    new = json.loads(text)
    new["a"].append("y")
    new["b"]["d"] = {"e": ["z"]}
    assert edit(text, new, 4) == ('{\n    "a": [\n        "x",\n        "y"\n    ],\n    "b": {\n        "c": 1,\n'
                                  '        "d": {\n            "e": [\n                "z"\n            ]\n        }\n'
                                  '    }\n}\n')
    new["a"].remove("x")
    assert json.loads(edit(text, new, 4)) == new
