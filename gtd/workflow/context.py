"""Everything one gtd invocation needs to run phases: repo, config, provider, escalator, audit, output."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from gtd.audit import AuditLog
from gtd.config.loader import LoadedConfig
from gtd.config.schema import GtdConfig, Level, Phase
from gtd.escalation.escalator import Escalator
from gtd.providers.base import Provider
from gtd.workflow.progress import Progress


@dataclass
class RunContext:
    repo: Path
    loaded: LoadedConfig
    provider_factory: Callable[[GtdConfig], Provider]  # resolved on first use: steps without an agent need none
    escalator: Escalator
    audit: AuditLog
    progress: Progress
    reload_config: Callable[[], LoadedConfig]
    level_override: Level | None = None  # --level on the command line (explicit, so honoured and logged)
    once_levels: dict[Phase, Level] = field(default_factory=dict)  # "allow once" level approvals

    @functools.cached_property
    def provider(self) -> Provider:
        return self.provider_factory(self.config)

    @property
    def config(self) -> GtdConfig:
        return self.loaded.config

    def refresh_config(self) -> None:
        """Re-read config after an approval was saved, so saved rules apply right away."""
        self.loaded = self.reload_config()

    def level_for(self, phase: Phase) -> Level:
        if self.level_override is not None:
            return self.level_override
        configured = self.config.sandbox.phases.for_phase(phase)
        level = configured
        for once in (self.once_levels.get(phase), self.escalator.raised_levels.get(phase)):
            if once is not None and level.rank < once.rank:
                level = once
        return level
