"""`gtd approve` in a real terminal: each choice, and where it is saved."""

from __future__ import annotations

import json
import signal

import tomlkit

from escalation_support import finish
from gtd.audit import AuditLog
from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import save_rule
from gtd.escalation.pending import PendingStore
from gtd.escalation.request import EscalationRequest
from gtd.paths import user_config_file
from support import git


def _seed(repo, *requests):
    store = PendingStore(repo)
    for request in requests:
        store.add(request)
    return store


DOMAIN = EscalationRequest.create(kind="domain", target="registry.npmjs.org:443", phase=Phase.BUILD,
                                  level=Level.READWRITE, reason="test command `npm test` failed with a network error")
LEVEL = EscalationRequest.create(kind="level", target="network", phase=Phase.BUILD, level=Level.READWRITE,
                                 reason="the build needs to download toolchains")


def test_approve_saves_to_project_then_to_user(repo, spawn_gtd):
    store = _seed(repo, DOMAIN, LEVEL)
    child = spawn_gtd("approve", cwd=repo)
    child.expect("Pending request 1 of 2")
    child.expect("connect to registry.npmjs.org:443 \\(build phase, level readwrite\\)")
    child.expect("sandbox.levels.readwrite.allowDomains \\+= 'registry.npmjs.org:443'")
    child.expect("Decision \\[p/u/d/s\\]")
    child.sendline("p")
    child.expect("saved sandbox.levels.readwrite.allowDomains")
    child.expect("Pending request 2 of 2")
    child.expect("sandbox.phases.build = 'network'")
    child.expect("Decision")
    child.sendline("u")
    output, status = finish(child)
    assert status == 0, output

    assert json.loads((repo / ".gtdrc.json").read_text()) == {
        "sandbox": {"levels": {"readwrite": {"allowDomains": ["registry.npmjs.org:443"]}}}}
    assert git(repo, "log", "-1", "--format=%s").strip() == \
        "🔐 gtd: allow registry.npmjs.org:443 at readwrite (approved by user)"
    assert tomlkit.parse(user_config_file().read_text()).unwrap() == {"sandbox": {"phases": {"build": "network"}}}
    assert store.list() == []
    decisions = [(e["id"], e["decision"], e["decided_by"], e["via"]) for e in AuditLog(repo).read()]
    assert decisions == [(DOMAIN.id, "project", "user", "gtd approve"), (LEVEL.id, "user", "user", "gtd approve")]


def test_approve_deny_drops_and_skip_keeps_pending(repo, spawn_gtd):
    store = _seed(repo, DOMAIN, LEVEL)
    child = spawn_gtd("approve", cwd=repo)
    child.expect("Pending request 1 of 2")
    child.expect("Decision")
    child.sendline("d")
    child.expect("denied")
    child.expect("Pending request 2 of 2")
    child.expect("Decision")
    child.sendline("s")
    child.expect("skipped: still pending")
    output, status = finish(child)
    assert status == 0, output
    assert not (repo / ".gtdrc.json").exists() and not user_config_file().exists()
    assert [r.id for r in store.list()] == [LEVEL.id]
    assert [(e["decision"], e["decided_by"]) for e in AuditLog(repo).read()] == [("deny", "user")]


def test_approve_resolves_requests_a_saved_rule_already_allows(repo, spawn_gtd):
    _seed(repo, DOMAIN)
    save_rule(DOMAIN, "user", repo)  # approved meanwhile, e.g. in another terminal
    child = spawn_gtd("approve", cwd=repo)
    child.expect("already allowed by a saved user rule")
    output, status = finish(child)
    assert status == 0 and "Decision" not in output
    assert PendingStore(repo).list() == []
    assert [e["decided_by"] for e in AuditLog(repo).read()] == ["saved rule"]


def test_ctrl_c_interrupts_even_when_the_test_run_ignores_sigint(repo, spawn_gtd):
    """A person's terminal gives gtd SIGINT at its default action even when this test run inherited
    it ignored (started as `pytest &` from a script): otherwise Ctrl-C never reaches gtd."""
    store = _seed(repo, DOMAIN)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child = spawn_gtd("approve", cwd=repo)
    finally:
        signal.signal(signal.SIGINT, previous)
    child.expect("Decision")
    child.sendintr()
    output, status = finish(child)
    assert status == 130, output
    assert [r.id for r in store.list()] == [DOMAIN.id]


def test_approve_end_of_input_keeps_pending_and_ctrl_c_interrupts(repo, spawn_gtd):
    store = _seed(repo, DOMAIN, LEVEL)
    child = spawn_gtd("approve", cwd=repo)
    child.expect("Pending request 1 of 2")
    child.expect("Decision")
    child.sendeof()  # Ctrl-D: no answer is not a denial here
    child.expect("skipped: still pending")
    child.expect("Pending request 2 of 2")
    child.expect("Decision")
    child.sendintr()  # Ctrl-C stops gtd; nothing is lost
    output, status = finish(child)
    assert status == 130, output
    assert [r.id for r in store.list()] == [DOMAIN.id, LEVEL.id]
    assert not (repo / ".gtdrc.json").exists() and not user_config_file().exists()
