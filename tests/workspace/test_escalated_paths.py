"""Escalated write paths are resolved before a saved rule is matched (issue 9, class 3): a request
spelled through a symlink or `..` is never judged "covered by the workspace"."""

from __future__ import annotations

import os

import pytest

from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import saved_rule_scope
from gtd.escalation.request import EscalationRequest


def _path_request(target: str) -> EscalationRequest:
    return EscalationRequest.create(kind="path", target=target, phase=Phase.BUILD, level=Level.READWRITE,
                                    reason="write call")


def test_a_real_path_in_the_writable_workspace_is_covered(repo):
    assert saved_rule_scope(_path_request(str(repo / "src" / "new.py")), repo) is not None


@pytest.mark.parametrize("spelled", ["{repo}/out/evil.txt", "{repo}/../outside/evil.txt", "{repo}/src/../../outside/x"])
def test_a_path_spelled_inside_but_landing_outside_is_not_covered(repo, tmp_path, spelled):
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "out").symlink_to(outside)
    assert saved_rule_scope(_path_request(spelled.format(repo=repo)), repo) is None
    assert os.listdir(outside) == []
