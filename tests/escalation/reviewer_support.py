"""Shared by the reviewer's workflow tests: `gtd plan` with the real claude CLI (agent and reviewer) against
the fake model server. The agent writes the plan, then a note outside the plan phase's boundary (readonly:
only TODO.md is writable); its resume turn writes the note again, so the note says "after" only if the
request was granted and the agent resumed."""

from __future__ import annotations

import pytest

from fakemodel.server import FakeModelServer, say, shell, tool
from gtd.audit import AuditLog
from gtd.paths import user_config_file
from providers.agents import point_at, require_cli

MARK = "gtd escalation review"  # in every reviewer question (gtd/escalation/reviewer.py review_prompt)
RESUMED = "You were stopped because the sandbox refused"
PLAN = "# Notes\n\n## Action items\n- [ ] Write notes\n  - Tests: `true`\n\n## Open questions\n\n## Learnings\n"
WRITE_NOTE = "mkdir -p notes && echo {} > notes/design.md"
ALLOW = '{"decision": "allow", "reason": "a notes directory inside the project"}'
DENY = '{"decision": "deny", "reason": "notes are not part of planning"}'


@pytest.fixture
def claude(monkeypatch, fake_model):
    require_cli("claude", monkeypatch)
    point_at(fake_model, monkeypatch)
    return fake_model


def configure(repo, server: FakeModelServer, *, policy: str | None = "auto", seconds: int = 30,
              tool_call: str = WRITE_NOTE.format("first")) -> None:
    """The user config (the reviewer may only be switched on there or in a trusted project file) and the script."""
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    sandbox = f'[sandbox]\nescalationPolicy = "{policy}"\n[sandbox.reviewer]\nrules = ["notes may go in notes/"]\n' \
        if policy else ""
    path.write_text(f'provider = "claude"\n[timeouts]\nreviewerSeconds = {seconds}\n{sandbox}')
    server.script([tool("Read", {"file_path": str(repo / "TODO.md")}), tool("Write", {"file_path": str(repo / "TODO.md"), "content": PLAN}), shell(tool_call),
                   say("Planned.")])
    server.on_prompt(RESUMED, [shell(WRITE_NOTE.format("after")), say("done")])


def note(repo) -> str | None:
    path = repo / "notes" / "design.md"
    return path.read_text() if path.exists() else None


def decisions(repo) -> list[dict]:
    return [e for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]


def events(repo, kind: str) -> list[dict]:
    return [e for e in AuditLog(repo).read() if e["event"] == kind]


def nothing_saved(repo) -> bool:
    """No rule saved anywhere: the user config is as the test wrote it and there is no project file."""
    return "allowDomains" not in user_config_file().read_text() and "writablePaths" not in user_config_file().read_text() \
        and not (repo / ".gtdrc.json").exists()
