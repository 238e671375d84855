"""An escalation request: exactly what was blocked, where, and the concrete rule saving it would add."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from gtd.audit import redact
from gtd.config.schema import Level, Phase

Kind = Literal["domain", "path", "level"]
Scope = Literal["project", "user"]


@dataclass(frozen=True)
class ConfigRule:
    """One concrete config change: append `value` to the list at `key`, or set `key` to `value`."""

    key: str  # dotted camelCase key, e.g. sandbox.levels.readwrite.allowDomains
    value: Any
    append: bool

    def describe(self) -> str:
        return f"{self.key} += {self.value!r}" if self.append else f"{self.key} = {self.value!r}"

    __str__ = describe


class EscalationRequest(BaseModel):
    kind: Kind
    target: str  # "host:port", an absolute path, or the requested level
    phase: Phase | None
    level: Level  # the level the request was raised at
    requested_level: Level | None = None
    reason: str  # the tool call or test failure that caused it
    id: str
    created: str
    # The reviewer's verdict when it denied (escalationPolicy auto): {"decision", "reason", "model"}.
    review: dict[str, Any] | None = None

    @classmethod
    def create(cls, *, kind: Kind, target: str, phase: Phase | None, level: Level, reason: str,
               requested_level: Level | None = None) -> "EscalationRequest":
        if kind == "level":
            requested_level = Level(requested_level or target)
            target = requested_level.value
            if phase is None:
                raise ValueError("a level request needs the phase whose level it raises")
        # The reason quotes the tool call (a command line, a file's content): it is shown, stored in the
        # pending list and printed as JSON, so credentials in it are redacted here, once.
        return cls(kind=kind, target=target, phase=phase, level=level, requested_level=requested_level,
                   reason=redact(reason),
                   id=request_id(kind, target, phase, level),
                   created=datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def summary(self) -> str:
        what = {"domain": f"connect to {self.target}", "path": f"write {self.target}",
                "level": f"run {self.phase.value if self.phase else 'the phase'} at level {self.target}"}[self.kind]
        phase = f"{self.phase.value} phase, " if self.phase else ""
        return f"{what} ({phase}level {self.level.value})"

    def short(self, repo_root: Path | None = None) -> str:
        """Commit-message wording: `allow registry.npmjs.org:443 at readwrite`, `allow writing docs at readonly`
        (a path as the project rule names it: relative to the repository, never this machine's absolute path)."""
        if self.kind == "domain":
            return f"allow {self.target} at {self.level.value}"
        if self.kind == "path":
            return f"allow writing {config_path(self.target, 'project', repo_root)} at {self.level.value}"
        return f"run {self.phase.value if self.phase else 'phase'} at {self.target}"

    def rule(self, scope: Scope = "project", repo_root: Path | None = None) -> ConfigRule:
        """The concrete rule saving this request adds: never a vague grant."""
        if self.kind == "domain":
            return ConfigRule(f"sandbox.levels.{self.level.value}.allowDomains", self.target, append=True)
        if self.kind == "path":
            return ConfigRule(f"sandbox.levels.{self.level.value}.writablePaths",
                              config_path(self.target, scope, repo_root), append=True)
        if self.phase is None or self.requested_level is None:
            raise ValueError("a level request needs a phase and a requested level")
        return ConfigRule(f"sandbox.phases.{self.phase.value}", self.requested_level.value, append=False)


def request_id(kind: str, target: str, phase: Phase | None, level: Level) -> str:
    """Stable across runs, so a request pending from a headless run is recognised when it comes again."""
    key = f"{kind}|{target}|{phase.value if phase else ''}|{level.value}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def config_path(target: str, scope: Scope, repo_root: Path | None) -> str:
    """How a path is written in a rule. Project rules are shared, so a path inside the repository is
    relative to it; a user rule applies in every repository, so it names the exact place (~ or absolute)."""
    path = Path(target)
    if scope == "project" and repo_root is not None:
        try:
            return str(path.relative_to(repo_root.resolve())) or "."
        except ValueError:
            pass
    home = Path(os.path.expanduser("~")).resolve()
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
