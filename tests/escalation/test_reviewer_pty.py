"""escalationPolicy auto in a terminal: `gtd plan` with the real claude CLI as agent and reviewer against the
fake model. Allow asks nobody; deny asks the person as today, showing the verdict and its reason; garbage or no
answer in time asks the person as under `prompt`."""

from __future__ import annotations

import shutil

import pytest

from escalation_support import finish
from fakemodel.plugin import fake_model  # noqa: F401 - the fixture
from fakemodel.server import hang, say
from reviewer_support import ALLOW, DENY, MARK, claude, configure, decisions, note, nothing_saved  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

QUESTION = r"Decision \[o/p/u/d\]"


def test_allow_asks_nobody_and_the_live_view_says_who_allowed(claude, repo, spawn_gtd):
    configure(repo, claude)
    claude.untooled(MARK, say(ALLOW))
    child = spawn_gtd("plan", "take notes", cwd=repo, timeout=180)
    child.expect("allowed by reviewer: a notes directory inside the project")
    output, status = finish(child)
    assert status == 0, output
    assert "Decision [" not in child.before and note(repo) == "after\n"
    assert [(d["decision"], d["decided_by"]) for d in decisions(repo)] == [("once", "reviewer")]
    assert nothing_saved(repo)


def test_deny_asks_the_person_showing_the_verdict_and_the_person_decides(claude, repo, spawn_gtd):
    configure(repo, claude)
    claude.untooled(MARK, say(DENY))
    child = spawn_gtd("plan", "take notes", cwd=repo, timeout=180)
    child.expect("The sandbox blocked the agent")
    child.expect("reviewer's verdict: deny")
    child.expect("notes are not part of planning")
    child.expect(QUESTION)
    child.sendline("o")  # the person overrules the reviewer, for this run
    output, status = finish(child)
    assert status == 0, output
    assert note(repo) == "after\n"
    [decision] = decisions(repo)
    assert (decision["decision"], decision["decided_by"], decision["reviewer_decision"], decision["reviewer_reason"]) == \
        ("once", "user", "deny", "notes are not part of planning")


@pytest.mark.parametrize("answer, seconds, why", [
    (say("Looks fine to me."), 30, "not the JSON verdict"),
    (hang(120), 4, r"reviewerSeconds \(4s\)"),
])
def test_no_verdict_asks_the_person_as_under_prompt(claude, repo, spawn_gtd, answer, seconds, why):
    configure(repo, claude, seconds=seconds)
    claude.untooled(MARK, answer)
    child = spawn_gtd("plan", "take notes", cwd=repo, timeout=120)
    child.expect("reviewer gave no verdict")
    child.expect(why)
    child.expect("The sandbox blocked the agent")
    child.expect(QUESTION)
    assert "reviewer's verdict" not in child.before
    child.sendline("d")
    output, status = finish(child)
    assert status == 0, output  # the plan lands without the note
    assert note(repo) is None
    assert [(d["decision"], d["decided_by"]) for d in decisions(repo)] == [("deny", "user")]


def test_the_prompt_policy_asks_the_person_and_never_the_model(claude, repo, spawn_gtd):
    configure(repo, claude, policy=None)
    claude.untooled(MARK, say(ALLOW))
    child = spawn_gtd("plan", "take notes", cwd=repo, timeout=180)
    child.expect(QUESTION)
    shown = child.before
    child.sendline("d")
    output, status = finish(child)
    assert status == 0, output
    assert claude.untooled_requests(MARK) == []
    assert "reviewer" not in shown + output


def test_gtd_approve_shows_the_reviewers_verdict_on_a_request_it_denied_headless(repo, spawn_gtd):
    """A request the reviewer denied headless is pending with its verdict; the person sees it when deciding,
    and the verdict's text is shown as text (no escape sequence of the model's reaches the terminal)."""
    from gtd.config.schema import Level, Phase
    from gtd.escalation.pending import PendingStore
    from gtd.escalation.request import EscalationRequest

    request = EscalationRequest.create(kind="domain", target="registry.npmjs.org:443", phase=Phase.BUILD,
                                       level=Level.READWRITE, reason="Bash call: npm install")
    PendingStore(repo).add(request.model_copy(update={"review": {
        "decision": "deny", "reason": "not a registry this project uses \x1b]52;c;ZXZpbA==\x07", "model": "m-1"}}))
    child = spawn_gtd("approve", cwd=repo)
    child.expect(r"reviewer's verdict: deny \(m-1\): not a registry this project uses")
    child.expect(r"Decision \[p/u/d/s\]")
    assert "\x1b]52" not in child.before
    child.sendline("d")
    output, status = finish(child)
    assert status == 0, output
