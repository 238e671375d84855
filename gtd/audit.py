"""The per-project audit log: append-only JSONL in gtd's state, which no sandbox can write but every
sandbox can read (gtd's state dir is read-only inside, not hidden): nothing the agent is not to learn
is recorded (the host-loopback hints, sandbox/hints.py split_hints).

Every run, phase, level, violation, escalation request and decision (and who decided)
is recorded so a person can always answer "why was this blocked?" and "who allowed that?".
Secrets are redacted before anything is written.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from pathlib import Path

from gtd.paths import project_state_dir

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any

AUDIT_FILE = "audit.jsonl"

# (pattern, replacement, what any match contains once lower-cased). Compiled at the first text that may
# hold one (~1 ms): an ASCII text holding none of a pattern's words cannot match it, and most audited values
# (levels, phases, paths, host names) hold none, so a `gtd sandbox run` compiles nothing (issue 13).
_REDACTIONS = (
    (r"sk-ant-[A-Za-z0-9_\-]{8,}", "sk-ant-***", ("sk-",)),
    (r"\bsk-[A-Za-z0-9_\-]{16,}", "sk-***", ("sk-",)),
    (r"\b(gh[pousr]_[A-Za-z0-9]{20,})", "gh*_***", ("gh",)),
    (r"\bAKIA[0-9A-Z]{16}\b", "AKIA***", ("akia",)),
    (r"\bxox[abpr]-[A-Za-z0-9\-]{10,}", "xox*-***", ("xox",)),
    (r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~\-+/=]{8,}", r"\1\2***", ("bearer", "basic")),
    (r"(?i)((?:api[_-]?key|access[_-]?key|token|secret|password|passwd|authorization)[\"']?\s*[:=]\s*[\"']?)"
     r"(?!(?:bearer|basic)\s)[^\s\"',;&]{4,}", r"\1***", ("api", "access", "token", "secret", "passw", "authorization")),
    (r"(://[^/\s:@]+:)[^@\s/]+@", r"\1***@", ("://",)),  # credentials in URLs, incl. the proxy token
)
_SECRET_KEY = (r"(?i)(api[_-]?key|token|secret|password|passwd|authorization|credential)",
               ("api", "token", "secret", "passw", "authorization", "credential"))


def _may_match(text: str, words: tuple[str, ...]) -> bool:
    """False only when no match is possible: an ASCII text without any of the words. (A non-ASCII text is
    always tried: under IGNORECASE, re also matches 'ſ' for 's' and 'ı' for 'i', which lower() keeps.)"""
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(word in lowered for word in words)


def redact(value: Any) -> Any:
    """The value with anything that looks like a credential replaced by ***."""
    if isinstance(value, str):
        for pattern, replacement, words in _REDACTIONS:
            if _may_match(value, words):
                value = re.sub(pattern, replacement, value)  # compiled once, in re's cache
        return value
    if isinstance(value, dict):
        return {key: "***" if isinstance(item, str) and item and _secret_key(str(key)) else redact(item)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(item) for item in value]
    return value


def _secret_key(key: str) -> bool:
    pattern, words = _SECRET_KEY
    return _may_match(key, words) and re.search(pattern, key) is not None


def _utc_now() -> str:
    """`datetime.now(timezone.utc).isoformat(timespec="milliseconds")` without importing datetime (~2 ms
    of every `gtd sandbox run`, which records itself here)."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}+00:00"


class AuditLog:
    def __init__(self, repo_root: Path):
        self.path = project_state_dir(repo_root) / AUDIT_FILE
        self.listeners: list = []  # called with each recorded entry (the progress view)

    def record(self, event: str, **fields: Any) -> dict:
        entry = {"time": _utc_now(), "event": event,
                 **redact({k: v for k, v in fields.items() if v is not None})}
        # A lone surrogate (a file name that is not UTF-8, as os and git read it) becomes the JSON
        # escape \udcXX: the line stays valid UTF-8 and reads back as the same name.
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one whole line per writer, even from several processes
            os.write(fd, line)
        finally:
            os.close(fd)
        for listener in self.listeners:
            listener(entry)
        return entry

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        entries = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn line (crash mid-write) never hides the rest of the log
        return entries
