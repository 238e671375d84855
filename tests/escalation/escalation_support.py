"""Helpers for the escalation tests (importable: pytest puts this directory on sys.path)."""

from __future__ import annotations

import pexpect


def finish(child: pexpect.spawn) -> tuple[str, int]:
    """Wait for the child to exit: (everything it printed since the last expect, exit status)."""
    child.expect(pexpect.EOF)
    output = child.before
    child.close()
    return output, child.exitstatus
