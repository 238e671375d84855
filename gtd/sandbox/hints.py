"""Hints for errors that hide their cause: a tool blames the network (or the registry) when what failed
was a write the sandbox refused. npm is the classic case: a read-only cache dir surfaces as "Invalid
response body while trying to fetch https://registry...: EROFS". gtd reads the refused path out of the
output and says what it is, why the sandbox refused it and the one change that would allow it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gtd.sandbox.violations import denied_write_paths

# Wording that makes a filesystem refusal look like a network failure.
_NETWORKISH = re.compile(r"while trying to fetch|request to https?://\S+ failed|\bnetwork\b|fetch failed|"
                         r"ECONNRESET|ETIMEDOUT|EAI_AGAIN|(?:failed|unable|could not) to download", re.IGNORECASE)


# Node reports a recursive mkdir under a read-only mount as ENOENT: "ENOENT: ..., mkdir '/x/y'".
_ENOENT_WRITE = re.compile(r"ENOENT: [^,\n]*, (?:mkdir|open|rename|symlink|link) '(?P<p>[^'\n]+)'")


def _refused_paths(output: str) -> list[str]:
    found = list(denied_write_paths(output))
    for match in _ENOENT_WRITE.finditer(output):
        path = match.group("p")
        if path not in found and os.path.isdir(os.path.dirname(path)):  # the parent is there: not a missing dir
            found.append(path)
    return found


def misleading_error_hints(output: str, policy) -> list[str]:
    """One line per refused write in an output that otherwise reads like a network error (none if not)."""
    if not output:
        return []
    refused = _refused_paths(output)
    text = output
    for raw in refused:  # a path that happens to contain "network" is not a network error
        text = text.replace(raw, "")
    if not refused or not _NETWORKISH.search(text):
        return []
    from gtd.sandbox.why import why_path

    hints = []
    for raw in refused:
        path = Path(raw) if raw.startswith("/") else policy.workspace / raw
        verdict = why_path(policy, path)
        if verdict.allowed:
            continue  # writable by policy: the failure has another cause
        fix = f" To allow it: {verdict.fix}." if verdict.fix else ""
        hints.append(f"[gtd] hint: this error mentions the network, but the cause is the sandbox refusing to write "
                     f"{path} ({verdict.reason}).{fix}")
    return hints
