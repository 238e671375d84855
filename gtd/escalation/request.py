"""An escalation request: exactly what was blocked, where, and the concrete rule saving it would add."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from gtd.config.schema import Level, Phase

Kind = Literal["domain", "path", "level"]
Scope = Literal["project", "user"]


@dataclass(frozen=True)
class ConfigRule:
    """One concrete config change: append `value` to the list at `key`, or set `key` to `value`."""

    key: str  # dotted camelCase key
    value: Any
    append: bool

    def describe(self) -> str:
        return f"{self.key} += {self.value!r}" if self.append else f"{self.key} = {self.value!r}"


class EscalationRequest(BaseModel):
    kind: Kind
    target: str  # "host:port", an absolute path, or the requested level
    phase: Phase | None
    level: Level  # the level the request was raised at
    requested_level: Level | None = None
    reason: str
    id: str
    created: str

    @classmethod
    def create(cls, *, kind: Kind, target: str, phase: Phase | None, level: Level, reason: str,
               requested_level: Level | None = None) -> "EscalationRequest":
        key = f"{kind}|{target}|{phase.value if phase else ''}|{level.value}"
        return cls(kind=kind, target=target, phase=phase, level=level, requested_level=requested_level, reason=reason,
                   id=hashlib.sha256(key.encode()).hexdigest()[:12],
                   created=datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def summary(self) -> str:
        what = {"domain": f"connect to {self.target}", "path": f"write {self.target}",
                "level": f"run {self.phase.value if self.phase else 'the phase'} at level {self.target}"}[self.kind]
        phase = f"{self.phase.value} phase, " if self.phase else ""
        return f"{what} ({phase}level {self.level.value})"

    def rule(self, scope: Scope, repo_root: Path | None = None) -> ConfigRule:
        """The concrete rule saving this request adds: never a vague grant."""
        if self.kind == "domain":
            return ConfigRule(f"sandbox.levels.{self.level.value}.allowDomains", self.target, append=True)
        if self.kind == "path":
            return ConfigRule(f"sandbox.levels.{self.level.value}.writablePaths",
                              _portable_path(self.target, scope, repo_root), append=True)
        if self.phase is None or self.requested_level is None:
            raise ValueError("a level request needs a phase and a requested level")
        return ConfigRule(f"sandbox.phases.{self.phase.value}", self.requested_level.value, append=False)


def _portable_path(target: str, scope: Scope, repo_root: Path | None) -> str:
    """Project rules name paths relative to the repo (they are shared); user rules may use ~."""
    path = Path(target)
    if repo_root is not None:
        try:
            return str(path.relative_to(repo_root.resolve()))
        except ValueError:
            pass
    home = Path(os.path.expanduser("~"))
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
