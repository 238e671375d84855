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


def test_a_person_is_never_asked_to_grant_a_path_that_is_not_where_it_is_spelled(repo, tmp_path):
    """A pending request from before the fix (or one whose parent became a symlink since) is refused
    when it is decided: the prompt never shows it, the audit log says why."""
    from gtd.audit import AuditLog
    from gtd.escalation.escalator import Decision, Escalator
    from gtd.terminal_text import SafeConsole

    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "out").symlink_to(outside)
    asked: list[str] = []

    def prompt_input(text: str) -> str:
        asked.append(text)
        return "p"  # a person who would say yes

    import io

    shown = io.StringIO()
    escalator = Escalator(repo, interactive=True, audit=AuditLog(repo), phase=Phase.BUILD,
                          console=SafeConsole(file=shown, width=200), prompt_input=prompt_input)
    assert escalator.decide(_path_request(str(repo / "out" / "evil.txt"))) == Decision.DENY
    assert asked == []
    assert "goes through the symlink out inside the workspace" in shown.getvalue()
    decisions = [e for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert decisions[-1]["decided_by"] == "path check"
    assert not (repo / ".gtdrc.json").exists()
