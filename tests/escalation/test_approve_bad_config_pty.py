"""Saving into a config file that cannot be edited is a clear error, and the request stays pending."""

from __future__ import annotations

from escalation_support import finish
from gtd.config.schema import Level, Phase
from gtd.escalation.pending import PendingStore
from gtd.escalation.request import EscalationRequest

REQUEST = EscalationRequest.create(kind="domain", target="registry.npmjs.org:443", phase=Phase.BUILD,
                                   level=Level.READWRITE, reason="npm install failed with a network error")


def test_a_damaged_project_config_keeps_the_request_pending(repo, spawn_gtd):
    PendingStore(repo).add(REQUEST)
    (repo / ".gtdrc.json").write_text('{"provider": "pi",\n')  # a half-edited file
    child = spawn_gtd("approve", cwd=repo)
    child.expect("Decision")
    child.sendline("p")
    output, status = finish(child)
    assert status not in (0, None), output
    assert ".gtdrc.json" in output and "Traceback" not in output
    assert (repo / ".gtdrc.json").read_text() == '{"provider": "pi",\n'  # untouched
    assert [r.id for r in PendingStore(repo).list()] == [REQUEST.id]  # nothing lost
