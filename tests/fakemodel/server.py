"""A fake model API on loopback: Anthropic Messages (SSE) and OpenAI chat completions (streaming), and the
same Anthropic answers as Bedrock (`/model/<id>/invoke[-with-response-stream]`, AWS event stream; and its
Converse API, `/model/<id>/converse[-stream]`) and Vertex
(`...:rawPredict`, `...:streamRawPredict`) give them, with Google's token endpoint (`/token`): fakemodel/cloud.py.

Enough to drive the real agent CLIs end to end without a model. Each test scripts what the
"model" does as a list of steps; the server decides from the request alone which step is due
(the number of tool-calling assistant turns already in the conversation), so retries and side
requests do not shift the script:

    server.script([shell("echo hi > f"), say("done")])      # call the shell tool, then finish
    server.script([tool("AskUserQuestion", {...})])          # call any tool by its wire name
    server.fail(401, "invalid x-api-key")                    # every model request fails
    server.fail(503, "overloaded", times=2)                  # the next two fail, then the script goes on
    server.on_prompt("tests failed", [shell("fix"), say("ok")])  # a follow-up prompt gets its own script
    server.untooled("GTD-REVIEW", say('{"decision": "allow"}'))  # a request without tools that holds this text
    server.untooled("GTD-REVIEW", hang(30))                  # ... is held 30 s before it is answered

A follow-up prompt in the same conversation (a resumed session, e.g. gtd's re-prompt after failing
tests) is told apart by its text: `on_prompt(text, steps)` applies from the latest user message
containing `text`, and counts only the tool turns after that message.

Requests without tools (titles, summaries) get a short text answer, unless `untooled(text, step)` scripts
those whose system prompt or messages hold `text` (the escalation reviewer's one-shot question). Every request is recorded
in `server.requests` (path + parsed body) for assertions.

Usage: every answer reports 12 input and 7 output tokens, unless `server.report_usage(per_request)`
says otherwise: the n-th agent-loop request (1-based) then reports `per_request(n)` = (input, output),
side requests report none (0, 0), and `server.usage_reported` lists what each agent-loop request got,
so a test can compare a CLI's totals with the sums.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import unquote

from fakemodel.cloud import (BEDROCK_CONVERSE, BEDROCK_INVOKE, VERTEX_PREDICT, bedrock_chunks, converse_as_anthropic,
                             converse_frames, converse_message)

SHELL_TOOL_NAMES = ("Bash", "bash")  # claude, opencode / pi


@dataclass
class Step:
    text: str | None = None
    tool: str | None = None  # a wire name, or "<shell>" for whichever shell tool the CLI offers
    input: dict[str, Any] = field(default_factory=dict)
    error: tuple[int, str] | None = None  # answer this step with an HTTP error
    hang: float = 0.0  # hold the request this long before answering (a model that does not answer in time)


def say(text: str) -> Step:
    return Step(text=text)


def shell(command: str, text: str | None = None) -> Step:
    return Step(text=text, tool="<shell>", input={"command": command})


def tool(name: str, input: dict[str, Any] | None = None, text: str | None = None) -> Step:
    return Step(text=text, tool=name, input=dict(input or {}))


def error(status: int, message: str) -> Step:
    return Step(error=(status, message))


def hang(seconds: float) -> Step:
    return Step(text="(too late)", hang=seconds)


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    api: str  # "anthropic" | "openai"
    side: bool  # a request without tools (title etc.)
    headers: dict[str, str] = field(default_factory=dict)  # lower-cased names: which credential was sent
    raw: bytes = b""  # the body as received (a SigV4 signature covers it)
    method: str = "POST"
    raw_path: str = ""  # with its query, as received


class FakeModelServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self._steps: list[Step] = [say("done")]
        self._fail: tuple[int, str] | None = None
        self._fail_left: int | None = None  # failures still to answer (None: all of them)
        self._fail_agent_only = False  # only requests that offer tools fail (not titles)
        self._on_prompt: list[tuple[str, list[Step]]] = []
        self._untooled: list[tuple[str, Step]] = []
        self.closing = threading.Event()  # ends a held (hanging) request
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.token_requests: list[str] = []  # form bodies posted to /token (Google's OAuth token endpoint)
        self.minted_token = "ya29.fake-" + "%016x" % id(self)  # what /token answers (cloud.py)
        self._usage: Callable[[int], tuple[int, int]] | None = None
        self.usage_reported: list[tuple[int, int]] = []  # (input, output) per agent-loop request, with report_usage
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer((host, 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    # -- scripting ---------------------------------------------------------------------------
    def script(self, steps: list[Step]) -> None:
        """The whole script (replaces any earlier one, its follow-ups and any failure)."""
        with self._lock:
            self._steps, self._fail, self._on_prompt = list(steps), None, []

    def on_prompt(self, text: str, steps: list[Step]) -> None:
        """Steps for the conversation from the latest user message containing `text` on."""
        with self._lock:
            self._on_prompt.append((text, list(steps)))

    def untooled(self, text: str, step: Step) -> None:
        """How a request offering no tools whose system prompt or messages hold `text` is answered."""
        with self._lock:
            self._untooled.append((text, step))

    def untooled_requests(self, text: str) -> list[Recorded]:
        """The requests without tools that held `text` (e.g. every question the reviewer was asked)."""
        return [r for r in self.requests if r.side and text in json.dumps(r.body)]

    def fail(self, status: int, message: str, times: int | None = None, agent_only: bool = False) -> None:
        """Answer model requests with this HTTP error: every one, or only the next `times` (then the script).
        `agent_only`: only the agent loop's requests (those offering tools) fail, titles are answered."""
        with self._lock:
            self._fail = (status, message)
            self._fail_left = times
            self._fail_agent_only = agent_only

    def report_usage(self, per_request: Callable[[int], tuple[int, int]]) -> None:
        """The n-th agent-loop request (from 1) reports `per_request(n)` = (input, output) tokens; side
        requests (titles) report 0 and 0. What each got is appended to `usage_reported`."""
        with self._lock:
            self._usage = per_request
            self.usage_reported = []

    def usage_for(self, side: bool) -> tuple[int, int]:
        """The (input, output) tokens this answer reports."""
        with self._lock:
            if self._usage is None:
                return 12, 7
            if side:
                return 0, 0
            usage = self._usage(len(self.usage_reported) + 1)
            self.usage_reported.append(usage)
            return usage

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FakeModelServer":
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "FakeModelServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- decisions ---------------------------------------------------------------------------
    def main_requests(self) -> list[Recorded]:
        """The requests that offered tools (the agent loop, not titles)."""
        return [r for r in self.requests if not r.side]

    def decide(self, api: str, body: dict) -> Step:
        with self._lock:
            if self._fail and (_tool_names(api, body) or not self._fail_agent_only):
                failure = self._fail
                if self._fail_left is not None:
                    self._fail_left -= 1
                    if self._fail_left <= 0:
                        self._fail, self._fail_left = None, None
                return Step(error=failure)
            offered = _tool_names(api, body)
            if not offered:
                whole = json.dumps(body)
                return next((step for text, step in reversed(self._untooled) if text in whole), say("Fake title"))
            steps, messages = self._steps, body.get("messages") or []
            start = -1
            for text, follow_up in self._on_prompt:
                index = _last_prompt_with(messages, text)
                if index > start:
                    start, steps = index, follow_up
            done = _tool_turns(api, messages[start + 1:])
            step = steps[done] if done < len(steps) else say("done")
        if step.tool == "<shell>":
            name = next((n for n in SHELL_TOOL_NAMES if n in offered), None)
            if name is None:
                return say(f"no shell tool offered (tools: {sorted(offered)})")
            schema = _tool_schema(api, body, name)
            args = dict(step.input)
            for key in schema.get("required", []):  # e.g. opencode's bash wants a description
                args.setdefault(key, "run the command" if key == "description" else "")
            return Step(text=step.text, tool=name, input=args)
        return step

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"


def _tool_names(api: str, body: dict) -> set[str]:
    names = set()
    for t in body.get("tools") or []:
        if api == "openai":
            names.add((t.get("function") or {}).get("name"))
        else:
            names.add(t.get("name"))
    return {n for n in names if n}


def _tool_schema(api: str, body: dict, name: str) -> dict:
    for t in body.get("tools") or []:
        if api == "openai" and (t.get("function") or {}).get("name") == name:
            return t["function"].get("parameters") or {}
        if api == "anthropic" and t.get("name") == name:
            return t.get("input_schema") or {}
    return {}


def _user_text(message: dict) -> str:
    """The text a user message carries (not tool results: those are the CLI's, not a prompt)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _last_prompt_with(messages: list[dict], text: str) -> int:
    """Index of the latest user message containing `text`, or -1."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user" and text in _user_text(messages[index]):
            return index
    return -1


def _tool_turns(api: str, messages: list[dict]) -> int:
    """How many assistant turns in these messages called a tool: the index of the step due now."""
    count = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        if api == "openai":
            count += bool(m.get("tool_calls"))
        else:
            content = m.get("content")
            count += isinstance(content, list) and any(b.get("type") == "tool_use" for b in content if isinstance(b, dict))
    return count


def _sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    return ((f"event: {event}\n" if event else "") + f"data: {payload}\n\n").encode()


def _anthropic_events(server: FakeModelServer, body: dict, step: Step, usage: tuple[int, int]) -> list[bytes]:
    model = body.get("model", "fake-model")
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": server.next_id("msg"), "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": usage[0], "output_tokens": 0}}})]
    index = 0
    if step.text:
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "text", "text": ""}}))
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "text_delta", "text": step.text}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if step.tool:
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": server.next_id("toolu"), "name": step.tool, "input": {}}}))
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "input_json_delta", "partial_json": json.dumps(step.input)}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(_sse("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": "tool_use" if step.tool else "end_turn", "stop_sequence": None}, "usage": {"output_tokens": usage[1]}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def _anthropic_message(server: FakeModelServer, body: dict, step: Step, usage: tuple[int, int]) -> dict:
    content: list[dict] = []
    if step.text:
        content.append({"type": "text", "text": step.text})
    if step.tool:
        content.append({"type": "tool_use", "id": server.next_id("toolu"), "name": step.tool, "input": step.input})
    return {"id": server.next_id("msg"), "type": "message", "role": "assistant", "model": body.get("model", "fake-model"),
            "content": content, "stop_reason": "tool_use" if step.tool else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}


def _openai_chunks(server: FakeModelServer, body: dict, step: Step, usage: tuple[int, int]) -> list[bytes]:
    cid, model = server.next_id("chatcmpl"), body.get("model", "fake-model")

    def chunk(delta: dict, finish: str | None = None, **extra) -> bytes:
        return _sse(None, {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})

    out = [chunk({"role": "assistant", "content": ""})]
    if step.text:
        out.append(chunk({"content": step.text}))
    if step.tool:
        out.append(chunk({"tool_calls": [{"index": 0, "id": server.next_id("call"), "type": "function",
                                          "function": {"name": step.tool, "arguments": json.dumps(step.input)}}]}))
    out.append(chunk({}, "tool_calls" if step.tool else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append(_sse(None, {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                               "choices": [], "usage": _openai_usage(usage)}))
    out.append(_sse(None, "[DONE]"))
    return out


def _openai_usage(usage: tuple[int, int]) -> dict:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}


def _error_body(api: str, status: int, message: str) -> dict:
    if api == "openai":
        return {"error": {"message": message, "type": "invalid_request_error", "code": status}}
    kind = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found_error", 429: "rate_limit_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _handler(server: FakeModelServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def _json(self, status: int, data: dict) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, chunks: list[bytes], content_type: str = "text/event-stream") -> None:
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for c in chunks:
                self.wfile.write(c)
                self.wfile.flush()
            self.close_connection = True

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path.endswith("/inference-profiles"):  # Bedrock's control plane: claude lists the profiles
                server.requests.append(Recorded(path=path, body={}, api="bedrock-control", side=True, method="GET",
                                                raw_path=self.path,
                                                headers={k.lower(): v for k, v in self.headers.items()}))
                self._json(200, {"inferenceProfileSummaries": []})
            elif path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no route {path}"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            if path.endswith("/messages/count_tokens"):
                self._json(200, {"input_tokens": 12})
                return
            if path.endswith("/token"):  # Google's OAuth token endpoint, for a service account's JWT
                server.token_requests.append(raw.decode())
                self._json(200, {"access_token": server.minted_token, "expires_in": 3600, "token_type": "Bearer"})
                return
            cloud = BEDROCK_INVOKE.search(path) or VERTEX_PREDICT.search(path)
            if cloud:  # Bedrock or Vertex: Anthropic's body, the model and the streaming named by the path
                body = {**body, "model": unquote(cloud.group(1)), "stream": cloud.group(2).startswith(("invoke-", "stream"))}
            converse = BEDROCK_CONVERSE.search(path)
            if converse:  # read in Anthropic's shape, answered in Converse's
                body = converse_as_anthropic(body, unquote(converse.group(1)), converse.group(2).endswith("-stream"))
            if path.endswith("/messages") or cloud or converse:
                api = "anthropic"
            elif path.endswith("/chat/completions"):
                api = "openai"
            else:
                self._json(404, {"error": {"message": f"no route {path}"}})
                return
            side = not _tool_names(api, body)
            server.requests.append(Recorded(path=path, body=body, api=api, side=side, raw=raw, raw_path=self.path,
                                            headers={k.lower(): v for k, v in self.headers.items()}))
            step = server.decide(api, body)
            if step.hang:
                server.closing.wait(step.hang)
            if step.error:
                self._json(step.error[0], _error_body(api, *step.error))
                return
            usage = server.usage_for(side)
            if converse:
                tool = (server.next_id("tooluse"), step.tool, step.input) if step.tool else None
                if body["stream"]:
                    self._stream(converse_frames(step.text, tool, usage), "application/vnd.amazon.eventstream")
                else:
                    self._json(200, converse_message(step.text, tool, usage))
            elif api == "anthropic":
                if BEDROCK_INVOKE.search(path) and body.get("stream"):
                    self._stream(bedrock_chunks(_anthropic_events(server, body, step, usage)),
                                 "application/vnd.amazon.eventstream")
                elif body.get("stream"):
                    self._stream(_anthropic_events(server, body, step, usage))
                else:
                    self._json(200, _anthropic_message(server, body, step, usage))
            elif body.get("stream"):
                self._stream(_openai_chunks(server, body, step, usage))
            else:
                message: dict[str, Any] = {"role": "assistant", "content": step.text or ""}
                if step.tool:
                    message["tool_calls"] = [{"id": server.next_id("call"), "type": "function",
                                              "function": {"name": step.tool, "arguments": json.dumps(step.input)}}]
                self._json(200, {"id": server.next_id("chatcmpl"), "object": "chat.completion", "created": 0,
                                 "model": body.get("model", "fake-model"),
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if step.tool else "stop"}],
                                 "usage": _openai_usage(usage)})

    return Handler
