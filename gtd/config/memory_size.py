"""Memory sizes as the config spells them (`8G`, `512MiB`, `75%` of RAM, `none`), read into bytes and
written back for people."""

from __future__ import annotations

import os
import re

MEMORY_SPEC = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b|%)?\s*$", re.IGNORECASE)
UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
OFF = ("0", "none", "off", "unlimited")
MIN_MEMORY = 16 << 20


def parse_memory(spec: str | int | None) -> int | None:
    """`8G`, `512MiB`, `75%` (of this machine's RAM), bytes as an int; `0`/`none`/`off` -> None (no limit)."""
    if spec is None:
        return None
    if isinstance(spec, int):
        if spec < 0:
            raise ValueError(f"{spec}: a memory size cannot be negative (use none for no limit)")
        return _at_least_minimum(spec, spec) or None
    text = spec.strip().lower()
    if text in OFF:
        return None
    m = MEMORY_SPEC.match(text)
    if not m:
        raise ValueError(f"{spec!r} is not a memory size: use e.g. 8G, 512M, 75% (of RAM) or none")
    number, unit = float(m.group(1)), (m.group(2) or "").rstrip("b").rstrip("i")
    if m.group(2) == "%":
        if not 0 < number <= 100:
            raise ValueError(f"{spec!r}: a share of RAM is between 0% and 100%")
        return int(total_memory() * number / 100)
    return _at_least_minimum(int(number * UNITS[unit]), spec) or None


def _at_least_minimum(size: int, spec) -> int:
    """A limit no command can start under is a slip (`memory = 5` meant 5G: a bare number is bytes), not a
    choice: refused when the config is read, not found out as every command killed at start."""
    if 0 < size < MIN_MEMORY:
        raise ValueError(f"{spec!r} is {size} bytes, too little for any command to start (at least "
                         f"{MIN_MEMORY >> 20}M); a bare number counts bytes: write the unit, e.g. 8G or 512M")
    return size


def total_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def human(n: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if n >= UNITS[unit.lower()]:
            return f"{n / UNITS[unit.lower()]:.1f}".rstrip("0").rstrip(".") + unit
    return str(n)
