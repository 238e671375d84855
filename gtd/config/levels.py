"""Phases and sandbox levels: plain enums, so the CLI can parse `--phase`/`--level` without pydantic."""

from __future__ import annotations

from enum import Enum


class Phase(str, Enum):
    PLAN = "plan"
    BUILD = "build"
    LEARN = "learn"


class Level(str, Enum):
    """Sandbox boundary levels, from tightest to loosest. Each includes the ones below it."""

    READONLY = "readonly"
    READWRITE = "readwrite"
    NETWORK = "network"
    FULL = "full"

    @property
    def rank(self) -> int:
        return list(Level).index(self)

    def at_most(self, other: "Level") -> bool:
        return self.rank <= other.rank
