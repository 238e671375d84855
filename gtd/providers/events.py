"""The one event model every provider's stream is parsed into."""

from __future__ import annotations

from enum import Enum
import json

from gtd.record import field, record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any


class EventKind(str, Enum):
    START = "start"  # session started (session_id, model, tools offered)
    TEXT = "text"  # assistant text
    TOOL_CALL = "tool_call"  # the model asked to run a tool (tool, tool_input, tool_id)
    TOOL_RESULT = "tool_result"  # a tool finished (tool_id, text, is_error)
    END = "end"  # the run finished (usage, cost_usd, is_error)
    USAGE = "usage"  # one model request of the loop that a CLI reports apart (usage, cost_usd): opencode's steps
    ERROR = "error"  # API or CLI error (text)
    RETRY = "retry"  # the CLI is retrying a failed API request itself (text: what failed, attempt)


@record
class AgentEvent:
    kind: EventKind
    text: str | None = None
    tool: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_id: str | None = None
    is_error: bool = False
    session_id: str | None = None
    model: str | None = None
    tools: list[str] | None = None  # START: tool names the CLI offers, as on the wire
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None
    raw: dict[str, Any] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (without `raw`, without unset fields): the scripted agent's wire format."""
        out: dict[str, Any] = {"kind": self.kind.value}
        for name in ("text", "tool", "tool_input", "tool_id", "session_id", "model", "tools", "usage", "cost_usd"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.is_error:
            out["is_error"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AgentEvent":
        """Inverse of `to_dict`; unknown keys are ignored so older readers accept newer writers."""
        known = {"text", "tool", "tool_input", "tool_id", "is_error", "session_id", "model", "tools", "usage", "cost_usd"}
        return cls(kind=EventKind(data["kind"]), raw=data, **{k: v for k, v in data.items() if k in known})


def token_counts(usage: dict[str, Any] | None) -> tuple[int, int] | None:
    """(input, output) tokens from any CLI's usage object, cache reads/writes counted as input:
    claude `input_tokens`/`output_tokens`/`cache_*_input_tokens`, opencode `input`/`output`/`reasoning`/
    `cache.{read,write}`, pi `input`/`output`/`cacheRead`/`cacheWrite`. None if it has no token counts."""
    if not isinstance(usage, dict):
        return None

    def num(*keys: str) -> int:
        total = 0
        for key in keys:
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total += int(value)
        return total

    known = {"input_tokens", "output_tokens", "input", "output"}
    if not known & usage.keys():
        return None
    cache = usage.get("cache") if isinstance(usage.get("cache"), dict) else {}
    cached = sum(int(v) for v in (cache.get("read"), cache.get("write")) if isinstance(v, (int, float)))
    inputs = num("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "input", "cacheRead",
                 "cacheWrite") + cached
    return inputs, num("output_tokens", "output", "reasoning")


def call_detail(tool_input: dict[str, Any] | None) -> str:
    """What a tool call is about, as a person reads it: the command, the pattern searched for (and
    where), the file, the URL or the query. "" when the input has none of these."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}

    def text(*keys: str) -> str:
        return next((tool_input[k] for k in keys if isinstance(tool_input.get(k), str) and tool_input[k]), "")

    if text("command", "cmd"):
        return text("command", "cmd")
    if text("pattern"):  # Grep/Glob: the pattern is the point, the path only where
        where = text("path", "include", "glob")
        return text("pattern") + (f" in {where}" if where else "")
    return text("file_path", "filePath", "path", "url", "query")


def json_object(line: str) -> dict[str, Any] | None:
    """One line of a CLI's JSON stream as an object, or None for anything else (banners, noise)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
