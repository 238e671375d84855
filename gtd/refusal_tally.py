"""Refusals counted per target, so a client that retries a refused host does not flood the screen.

pip retries a refused index five times per URL, over several URLs: one "deny" became 30 lines on
screen and 30 in the summary. The first refusal of a target is shown at once (what, why, the one
change that allows it); its repeats are counted, and said once, with their count, when the phase
or command ends. The summary has one entry per target with its count. Every refusal is still
audited (and a --json `refusal` event carries each one).
"""

from __future__ import annotations

import threading


class RefusalTally:
    """Thread-safe: the proxy reports refusals from its own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}  # "network host:443" -> times refused, in order of first refusal
        self._said: dict[str, int] = {}  # how many of them were already on screen

    def add(self, what: str) -> int:
        """Count one refusal of `what`; returns how many times it has been refused now (1: the first)."""
        with self._lock:
            count = self._counts.get(what, 0) + 1
            self._counts[what] = count
            if count == 1:
                self._said[what] = 1
            return count

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._counts)

    def unsaid_repeats(self) -> list[tuple[str, int, int]]:
        """(what, repeats not yet on screen, times in all) for each target refused again since it was
        last said; marks them said."""
        with self._lock:
            out = [(what, count - self._said.get(what, 0), count) for what, count in self._counts.items()
                   if count > self._said.get(what, 0)]
            for what, _, count in out:
                self._said[what] = count
            return out

    def entries(self) -> list[str]:
        """One entry per target, `×N` when it was refused more than once: for the summary."""
        with self._lock:
            return [what + (f" ×{count}" if count > 1 else "") for what, count in self._counts.items()]


def repeats_line(what: str, repeats: int, total: int) -> str:
    """How a target's repeats are said once: `refused network x:443 29 more time(s), 30 in all (...)`."""
    return f"refused {what} {repeats} more time(s), {total} in all (retried: shown once)"
