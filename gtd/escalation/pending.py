"""Requests a headless run had to deny, kept for `gtd approve` (per project, in gtd's state)."""

from __future__ import annotations

import json
from pathlib import Path

from gtd.errors import GtdError
from gtd.paths import project_state_dir
from gtd.pending_requests import PENDING_FILE  # gtd status reads the same file plainly

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:  # imported when a request is stored or read: every phase creates a PendingStore
    from filelock import FileLock

    from gtd.escalation.request import EscalationRequest


class PendingStore:
    """A JSON list of requests, edited under a file lock and replaced atomically."""

    def __init__(self, repo_root: Path):
        directory = project_state_dir(repo_root)
        self.path = directory / PENDING_FILE
        self._lock_path = directory / f"{PENDING_FILE}.lock"

    def _lock(self) -> FileLock:
        from filelock import FileLock

        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self._lock_path), timeout=30)

    def _read(self) -> list[EscalationRequest]:
        from gtd.escalation.request import EscalationRequest

        if not self.path.exists():
            return []
        try:
            return [EscalationRequest.model_validate(item) for item in json.loads(self.path.read_text(encoding="utf-8"))]
        except (ValueError, TypeError) as exc:  # never silently drop what a person still has to decide
            raise GtdError(f"the pending escalations file {self.path} is damaged ({exc}); "
                           "fix or delete it, then run `gtd approve` again") from None

    def _write(self, requests: list[EscalationRequest]) -> None:
        from gtd.config.writer import atomic_write

        atomic_write(self.path, json.dumps([r.model_dump(mode="json") for r in requests], indent=2) + "\n")

    def add(self, request: EscalationRequest) -> None:
        """Add unless the same request (same id) is already pending."""
        with self._lock():
            requests = self._read()
            if all(existing.id != request.id for existing in requests):
                self._write(requests + [request])

    def list(self) -> list[EscalationRequest]:
        with self._lock():
            return self._read()

    def remove(self, request_id: str) -> None:
        with self._lock():
            self._write([r for r in self._read() if r.id != request_id])
