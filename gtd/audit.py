"""The per-project audit log: append-only JSONL in gtd's state, which no sandbox can write but every
sandbox can read (gtd's state dir is read-only inside, not hidden): nothing the agent is not to learn
is recorded (the host-loopback hints, sandbox/diagnose/hints.py split_hints).

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


# A flood (an agent opening thousands of refused connections) must not grow the log without bound:
# an entry that repeats another of the last REPEAT_WINDOW_SECONDS (the same fields but the time) is
# counted, not written, and one entry with the count closes the window; past MAX_BYTES the log is
# rotated, ROTATED_FILES older ones kept (audit.jsonl.1, .2).
REPEAT_WINDOW_SECONDS = 10.0
MAX_BYTES = 8 * 1024 * 1024
ROTATED_FILES = 2
_SWEEP_SECONDS = 1.0


class _Repeats:
    """One entry's window: when it closes, and the repeats counted in it (not written yet)."""

    __slots__ = ("entry", "ends", "count", "first", "last")

    def __init__(self, entry: dict, ends: float):
        self.entry, self.ends, self.count, self.first, self.last = entry, ends, 0, "", ""

    def summary(self) -> dict:
        """The entry again, with how many times it repeated and when: written when the window closes."""
        return {**self.entry, "time": _utc_now(), "repeated": self.count, "repeated_from": self.first,
                "repeated_until": self.last}


class AuditLog:
    def __init__(self, repo_root: Path, *, window: float = REPEAT_WINDOW_SECONDS, max_bytes: int = MAX_BYTES,
                 keep: int = ROTATED_FILES):
        import threading

        self.path = project_state_dir(repo_root) / AUDIT_FILE
        self.listeners: list = []  # called with each recorded entry (the progress view), repeats included
        self.window, self.max_bytes, self.keep = window, max_bytes, max(1, keep)
        self._lock = threading.Lock()  # the proxy records from its own threads
        self._repeats: dict[str, _Repeats] = {}
        self._next_sweep = 0.0
        self._flush_at_exit = False

    def record(self, event: str, **fields: Any) -> dict:
        entry = {"time": _utc_now(), "event": event,
                 **redact({k: v for k, v in fields.items() if v is not None})}
        key = json.dumps({k: v for k, v in entry.items() if k != "time"}, sort_keys=True, ensure_ascii=False,
                         default=str)
        now = time.monotonic()
        with self._lock:
            lines = self._closed(now, key)
            repeats = self._repeats.get(key)
            if repeats is None:
                self._repeats[key] = _Repeats(entry, now + self.window)
                lines.append(entry)
            else:
                repeats.count += 1
                repeats.first = repeats.first or entry["time"]
                repeats.last = entry["time"]
                if not self._flush_at_exit:  # the count is written even when no later entry closes the window
                    import atexit

                    atexit.register(self.flush)
                    self._flush_at_exit = True
            if lines:
                self._append(lines)
        for listener in self.listeners:
            listener(entry)
        return entry

    def flush(self) -> None:
        """Write the count of every repeat not written yet (at the end of a session, and at exit)."""
        with self._lock:
            lines = [repeats.summary() for repeats in self._repeats.values() if repeats.count]
            self._repeats.clear()
            if lines:
                self._append(lines)

    def _closed(self, now: float, key: str) -> list[dict]:
        """The summaries of the windows closed by now (this key's always; the others once a second)."""
        closed = [key] if key in self._repeats and self._repeats[key].ends <= now else []
        if now >= self._next_sweep:
            self._next_sweep = now + min(_SWEEP_SECONDS, self.window)
            closed = [k for k, repeats in self._repeats.items() if repeats.ends <= now]
        summaries = []
        for k in closed:
            repeats = self._repeats.pop(k)
            if repeats.count:
                summaries.append(repeats.summary())
        return summaries

    def _append(self, entries: list[dict]) -> None:
        # A lone surrogate (a file name that is not UTF-8, as os and git read it) becomes the JSON
        # escape \udcXX: the line stays valid UTF-8 and reads back as the same name.
        data = b"".join((json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")
                        for entry in entries)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(5):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # one whole line per writer, even from several processes
                if attempt < 4 and not self._is_current(fd):
                    continue  # another process rotated the log while this one waited: write to the new one
                os.write(fd, data)
                if os.fstat(fd).st_size > self.max_bytes:
                    self._rotate()
                return
            finally:
                os.close(fd)

    def _is_current(self, fd: int) -> bool:
        try:
            here, there = os.fstat(fd), os.stat(self.path)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)

    def _rotate(self) -> None:
        """audit.jsonl -> .1 -> .2 ...; the oldest beyond `keep` is dropped. Under the writer's lock."""
        for number in range(self.keep, 0, -1):
            older = self._rotated(number)
            if number == self.keep and older.exists():
                older.unlink()
            source = self.path if number == 1 else self._rotated(number - 1)
            if source.exists():
                os.replace(source, older)

    def _rotated(self, number: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{number}")

    def files(self) -> list[Path]:
        """The log's files, oldest first: the rotated ones, then the current one."""
        return [p for p in (*(self._rotated(n) for n in range(self.keep, 0, -1)), self.path) if p.exists()]

    def read(self) -> list[dict]:
        entries = []
        for path in self.files():
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:  # rotated away meanwhile
                continue
            for line in text.splitlines():
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a torn line (crash mid-write) never hides the rest of the log
        return entries
