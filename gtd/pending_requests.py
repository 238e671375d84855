"""The pending escalation requests read plainly, for `gtd status` (issue 24): it starts fast, so it imports
neither pydantic nor gtd.escalation (whose PendingStore reads, edits and validates the same file)."""

from __future__ import annotations

import json
from pathlib import Path

from gtd.paths import project_state_dir

PENDING_FILE = "pending.json"


def read_plain(repo_root: Path) -> list[dict]:
    """The pending requests as plain dicts, for `gtd status` (no pydantic, no lock: the file is only ever
    replaced whole). A damaged file reads as one entry saying so, never as "nothing pending"."""
    path = project_state_dir(repo_root) / PENDING_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        return [{"kind": "damaged", "target": str(path), "reason": f"the pending list is damaged ({exc})"}]
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def describe_plain(request: dict) -> str:
    """EscalationRequest.summary for a plain dict: 'write /repo/notes (build phase, level readonly)'."""
    kind, target, phase = request.get("kind"), str(request.get("target", "")), request.get("phase")
    what = {"domain": f"connect to {target}", "path": f"write {target}",
            "level": f"run {phase or 'the phase'} at level {target}"}.get(kind, f"{kind} {target}")
    if kind == "damaged":
        return f"{request.get('reason')}: fix or delete {target}"
    return f"{what} ({f'{phase} phase, ' if phase else ''}level {request.get('level')})"
