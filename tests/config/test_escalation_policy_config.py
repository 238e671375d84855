"""`sandbox.escalationPolicy`, `sandbox.reviewer.rules`, `timeouts.reviewerSeconds`: the schema, the original's
`sandboxEscalationPolicy`, and the trust filter (an untrusted project file cannot switch the reviewer on or steer it)."""

from __future__ import annotations

import json

import pytest

from gtd.config.loader import load_config
from gtd.config.original import translate
from gtd.escalation.trust import TrustStore, filter_untrusted_project, loosening_entries
from gtd.errors import ConfigError
from gtd.paths import user_config_file

AUTO = {"sandbox": {"escalationPolicy": "auto", "reviewer": {"rules": ["allow any package registry"]}}}


def _write(repo, data):
    (repo / ".gtdrc.json").write_text(json.dumps(data, indent=2) + "\n")


def test_defaults_are_prompt_no_rules_and_a_bounded_reviewer_time(repo):
    config = load_config(repo).config
    assert config.sandbox.escalation_policy == "prompt"
    assert config.sandbox.reviewer.rules == []
    assert config.timeouts.reviewer_seconds == 60


def test_an_unknown_policy_is_an_error_naming_the_key(repo):
    _write(repo, {"sandbox": {"escalationPolicy": "yolo"}})
    with pytest.raises(ConfigError) as caught:
        load_config(repo)
    assert "escalationPolicy" in str(caught.value)


def test_the_originals_key_is_read_as_the_new_one_with_a_warning():
    out, warnings = translate({"sandboxEscalationPolicy": "auto"}, "x.json")
    assert out == {"sandbox": {"escalationPolicy": "auto"}}
    assert "'sandbox.escalationPolicy'" in warnings[0]


def test_switching_the_reviewer_on_and_its_rules_loosen():
    assert loosening_entries(AUTO) == ["sandbox.escalationPolicy: auto",
                                       "sandbox.reviewer.rules: allow any package registry"]
    assert loosening_entries({"sandbox": {"escalationPolicy": "prompt"}}) == []  # the default: tightening


def test_an_untrusted_project_file_cannot_switch_the_policy_on_or_set_rules(repo):
    _write(repo, AUTO)
    loaded = load_config(repo, project_filter=filter_untrusted_project)
    assert loaded.config.sandbox.escalation_policy == "prompt"
    assert loaded.config.sandbox.reviewer.rules == []
    assert "sandbox.escalationPolicy: auto" in loaded.warnings[0]


def test_a_trusted_project_file_and_the_user_config_can(repo):
    _write(repo, AUTO)
    TrustStore().trust(repo / ".gtdrc.json")
    config = load_config(repo, project_filter=filter_untrusted_project).config
    assert config.sandbox.escalation_policy == "auto"
    assert config.sandbox.reviewer.rules == ["allow any package registry"]
    (repo / ".gtdrc.json").unlink()
    user_config_file().parent.mkdir(parents=True, exist_ok=True)
    user_config_file().write_text('[sandbox]\nescalationPolicy = "auto"\n[sandbox.reviewer]\nrules = ["x"]\n')
    config = load_config(repo, project_filter=filter_untrusted_project).config
    assert (config.sandbox.escalation_policy, config.sandbox.reviewer.rules) == ("auto", ["x"])
