"""Helpers for the terminal tests (importable: pytest puts this directory on sys.path)."""

from __future__ import annotations

import re

_SGR = r"(?:\x1b\[[0-9;]*m)*"


def seen(literal: str) -> str:
    """A pexpect pattern for `literal` as it appears on a colour terminal (styles may split it anywhere)."""
    return _SGR.join(re.escape(char) for char in literal)


def uncoloured(text: str) -> str:
    """`text` without colour/style sequences (what a person reads)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
