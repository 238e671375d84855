"""What one sandboxed command may use: processes and memory, from `sandbox.limits` (none unless configured).
The Linux backend enforces them (gtd.sandbox.linux.limits); the policy only carries them."""

from __future__ import annotations

from gtd.config.memory_size import human, parse_memory
from gtd.record import record


@record(frozen=True)
class ResourceLimits:
    """What one sandboxed command may use; None = no limit."""

    processes: int | None = None
    memory: int | None = None  # bytes

    @classmethod
    def from_config(cls, limits) -> "ResourceLimits":
        return cls(processes=limits.processes or None, memory=parse_memory(limits.memory))

    def to_dict(self) -> dict:
        """The limits as configured; how this machine enforces them is the backend's to say
        (gtd.sandbox.linux.limits.enforced_by, added by `gtd sandbox explain`)."""
        return {
            "processes": self.processes or "no limit",
            "memory": human(self.memory) if self.memory else "no limit",
        }
