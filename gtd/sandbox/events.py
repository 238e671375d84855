"""What a sandbox session reports while it runs: a connection it asks about (NetworkRequest) and a
refusal it records (Violation). Shared by the session, its backends and everything that shows them."""

from __future__ import annotations

from gtd.config.levels import Level
from gtd.record import record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Literal


@record
class NetworkRequest:
    host: str
    port: int
    level: Level


@record
class Violation:
    kind: Literal["network", "write", "read", "limit"]
    target: str
    level: Level
    time: str
    detail: str = ""

    @classmethod
    def now(cls, kind, target: str, level: Level, detail: str = "") -> "Violation":
        from datetime import (  # here: most commands are never refused anything
            datetime,
            timezone,
        )

        return cls(kind, target, level, datetime.now(timezone.utc).isoformat(timespec="seconds"), detail)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "target": self.target, "level": self.level.value, "time": self.time, "detail": self.detail}
