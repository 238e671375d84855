"""The agent can never approve itself: the audit log, pending list, trust pins and both configs are
read-only inside the sandbox, at every sandboxed level."""

from __future__ import annotations

import json

import pytest

from gtd.audit import AuditLog
from gtd.config.schema import Level, Phase
from gtd.escalation.pending import PendingStore
from gtd.escalation.request import EscalationRequest
from gtd.escalation.trust import TrustStore
from gtd.paths import user_config_file
from support import run_gtd

pytestmark = pytest.mark.bwrap


@pytest.mark.parametrize("level", ["readwrite", "network"])
def test_sandboxed_commands_cannot_write_gtd_state_or_config(repo, level):
    audit = AuditLog(repo)
    audit.record("run", command="build")
    PendingStore(repo).add(EscalationRequest.create(kind="domain", target="evil.example:443", phase=Phase.BUILD,
                                                    level=Level.READWRITE, reason="r"))
    (repo / ".gtdrc.json").write_text("{}\n")
    TrustStore().trust(repo / ".gtdrc.json")
    user_config_file().parent.mkdir(parents=True, exist_ok=True)
    user_config_file().write_text("")
    targets = [audit.path, PendingStore(repo).path, TrustStore().path, user_config_file(), repo / ".gtdrc.json"]
    before = {path: path.read_bytes() for path in targets}
    forged = json.dumps({"sandbox": {"enabled": False}})
    script = "; ".join(f"(echo '{forged}' >> '{p}') 2>/dev/null && echo WROTE {p.name}" for p in targets)
    # `rm`, not `rm -f`: in the hidden HOME (issue 23) the log is not there, and `rm -f` says yes to a missing file
    script += f"; rm '{audit.path}' 2>/dev/null && echo REMOVED; mv '{audit.path}' /tmp/x 2>/dev/null && echo MOVED; true"
    result = run_gtd("sandbox", "run", "--level", level, "--", "sh", "-c", script, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "WROTE" not in result.stdout and "REMOVED" not in result.stdout and "MOVED" not in result.stdout
    assert {path: path.read_bytes() for path in targets[1:]} == {path: before[path] for path in targets[1:]}
    log = audit.path.read_bytes()  # gtd itself (outside the sandbox) appended its own entries; nobody else did
    assert log.startswith(before[audit.path]) and b"enabled" not in log
    events = audit.read()
    assert [e["event"] for e in events[:2]] == ["run", "sandbox_run"]
    # Each attempt was refused and, though the script silenced it, gtd saw and audited it
    # (gtd/sandbox/linux/write_watch.py): only gtd's own entries, and a violation per refused write.
    refused = {e["target"] for e in events[2:] if e["event"] == "violation" and e["kind"] == "write"}
    assert all(e["event"] == "violation" for e in events[2:]), events
    assert refused <= {str(p) for p in targets} | {str(p) + ".lock" for p in targets}, refused
    assert str(PendingStore(repo).path) in refused and str(user_config_file()) in refused, refused
