"""Everything one gtd invocation needs to run phases: repo, config, provider, escalator, audit, output."""

from __future__ import annotations

import functools
from pathlib import Path

from gtd.audit import AuditLog
from gtd.config.levels import Level, Phase
from gtd.config.view import ConfigView
from gtd.escalation.escalator import Escalator
from gtd.providers.base import Provider
from gtd.record import field, record
from gtd.workflow.progress import Progress

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)

if TYPE_CHECKING:
    from typing import Callable

    from gtd.config.loader import LoadedConfig


@record
class RunContext:
    repo: Path
    loaded: LoadedConfig
    provider_factory: Callable[[ConfigView], Provider]  # resolved on first use: steps without an agent need none
    escalator: Escalator
    audit: AuditLog
    progress: Progress
    reload_config: Callable[[], LoadedConfig]
    level_override: Level | None = None  # --level on the command line (explicit, so honoured and logged)
    once_levels: dict[Phase, Level] = field(default_factory=dict)  # "allow once" level approvals
    run_lock: object | None = None  # gtd.runlock.RunLock: this run's hold on the repository, released at its end

    @functools.cached_property
    def provider(self) -> Provider:
        return self.provider_factory(self.config)

    @property
    def config(self) -> ConfigView:
        """The validated config's values, read like the GtdConfig model: a load answered from the config
        cache then builds no pydantic model (~120 ms of every phase, issue 13)."""
        return ConfigView(self.loaded.values)

    def refresh_config(self) -> None:
        """Re-read config after an approval was saved, so saved rules apply right away."""
        self.loaded = self.reload_config()

    def level_for(self, phase: Phase) -> Level:
        if self.level_override is not None:
            return self.level_override
        level = Level(self.config.sandbox.phases.for_phase(phase))  # the view holds the level's name
        for once in (self.once_levels.get(phase), self.escalator.raised_levels.get(phase)):
            if once is not None and level.rank < once.rank:
                level = once
        return level
