"""What the fake model server needs to stand in for Amazon Bedrock and Google Vertex AI, and to check their
authorization the way those services do.

- Bedrock streams Anthropic's events inside AWS's binary event-stream framing (each a JSON `{"bytes": base64}`).
- Bedrock's Converse API (`/model/<id>/converse`, `/converse-stream`: what opencode and pi call): its request is
  read in Anthropic's shape (so the server's script counts its tool turns), its answer is Converse's own (a JSON
  document, or event-stream frames whose `:event-type` names the event and whose payload is the event itself).
- `sigv4_valid` checks an AWS Signature Version 4 from the request as received, written from AWS's
  published algorithm (not botocore's code, which gtd signs with): a test then fails if gtd signs the
  wrong path, host, body or key.
- Google's OAuth token endpoint (`/token`) mints access tokens for a service account's signed JWT.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import zlib
from urllib.parse import quote, unquote, urlsplit

BEDROCK_INVOKE = re.compile(r"/model/([^/]+)/(invoke|invoke-with-response-stream)$")
BEDROCK_CONVERSE = re.compile(r"/model/([^/]+)/(converse|converse-stream)$")
VERTEX_PREDICT = re.compile(r"/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/([^/:]+):(rawPredict|streamRawPredict)$")


def event_stream_message(payload: bytes, headers: dict[str, str]) -> bytes:
    """One message of AWS's event stream: prelude (lengths, CRC), string headers, payload, message CRC."""
    head = b"".join(len(k).to_bytes(1, "big") + k.encode() + b"\x07" + len(v).to_bytes(2, "big") + v.encode()
                    for k, v in headers.items())
    prelude = (12 + len(head) + len(payload) + 4).to_bytes(4, "big") + len(head).to_bytes(4, "big")
    message = prelude + zlib.crc32(prelude).to_bytes(4, "big") + head + payload
    return message + zlib.crc32(message).to_bytes(4, "big")


def bedrock_chunks(sse_events: list[bytes]) -> list[bytes]:
    """Anthropic's SSE events, as Bedrock's invoke-with-response-stream frames them."""
    out = []
    for event in sse_events:
        for line in event.decode().splitlines():
            if line.startswith("data: "):
                payload = json.dumps({"bytes": base64.b64encode(line[6:].encode()).decode()}).encode()
                out.append(event_stream_message(payload, {":event-type": "chunk", ":content-type": "application/json",
                                                          ":message-type": "event"}))
    return out


def converse_as_anthropic(body: dict, model: str, stream: bool) -> dict:
    """A Converse request as an Anthropic Messages body: text, tool_use and tool_result blocks, tools by name."""
    def block(b: dict) -> dict | None:
        if "text" in b:
            return {"type": "text", "text": b["text"]}
        if isinstance(b.get("toolUse"), dict):
            use = b["toolUse"]
            return {"type": "tool_use", "id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input")}
        if isinstance(b.get("toolResult"), dict):
            result = b["toolResult"]
            return {"type": "tool_result", "tool_use_id": result.get("toolUseId"), "content": [
                {"type": "text", "text": c.get("text") if "text" in c else json.dumps(c.get("json"))}
                for c in result.get("content") or [] if isinstance(c, dict)]}
        return None  # cachePoint, images, reasoning

    messages = [{"role": m.get("role"), "content": [x for x in (block(b) for b in m.get("content") or []
                                                                if isinstance(b, dict)) if x]}
                for m in body.get("messages") or [] if isinstance(m, dict)]
    specs = [t.get("toolSpec") for t in (body.get("toolConfig") or {}).get("tools") or [] if isinstance(t, dict)]
    out = {"model": model, "stream": stream, "messages": messages,
           "system": "\n".join(s.get("text") or "" for s in body.get("system") or [] if isinstance(s, dict))}
    tools = [{"name": s.get("name"), "input_schema": (s.get("inputSchema") or {}).get("json") or {}}
             for s in specs if isinstance(s, dict)]
    if tools:
        out["tools"] = tools
    return out


def _converse_usage(usage: tuple[int, int]) -> dict:
    return {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage)}


def converse_frames(text: str | None, tool: tuple[str, str, dict] | None, usage: tuple[int, int]) -> list[bytes]:
    """ConverseStream's answer: `text`, then `tool` = (toolUseId, name, input) if any, as event-stream frames."""
    def frame(event: str, payload: dict) -> bytes:
        return event_stream_message(json.dumps(payload).encode(), {":event-type": event, ":content-type":
                                                                   "application/json", ":message-type": "event"})

    out, index = [frame("messageStart", {"role": "assistant"})], 0
    if text:  # Bedrock sends no contentBlockStart for a text block
        out += [frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": text}}),
                frame("contentBlockStop", {"contentBlockIndex": 0})]
        index = 1
    if tool:
        out += [frame("contentBlockStart", {"contentBlockIndex": index,
                                            "start": {"toolUse": {"toolUseId": tool[0], "name": tool[1]}}}),
                frame("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": json.dumps(tool[2])}}}),
                frame("contentBlockStop", {"contentBlockIndex": index})]
    out.append(frame("messageStop", {"stopReason": "tool_use" if tool else "end_turn"}))
    out.append(frame("metadata", {"usage": _converse_usage(usage), "metrics": {"latencyMs": 1}}))
    return out


def converse_message(text: str | None, tool: tuple[str, str, dict] | None, usage: tuple[int, int]) -> dict:
    """Converse's (not streamed) answer."""
    content: list[dict] = [{"text": text}] if text else []
    if tool:
        content.append({"toolUse": {"toolUseId": tool[0], "name": tool[1], "input": tool[2]}})
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if tool else "end_turn", "usage": _converse_usage(usage), "metrics": {"latencyMs": 1}}


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_valid(method: str, raw_path: str, headers: dict[str, str], body: bytes, *, access_key: str,
                secret: str, region: str, service: str = "bedrock") -> tuple[bool, str]:
    """(valid, why not) for the SigV4 `authorization` in `headers` (lower-case names), as AWS checks it."""
    auth = headers.get("authorization", "")
    found = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                         r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})", auth)
    if not found:
        return False, f"not a SigV4 authorization: {auth[:60]!r}"
    key_id, day, in_region, in_service, signed_names, signature = found.groups()
    if (key_id, in_region, in_service) != (access_key, region, service):
        return False, f"signed as {key_id}/{in_region}/{in_service}"
    if "host" not in signed_names.split(";"):
        return False, "host is not signed"
    parts = urlsplit(raw_path)
    canonical_path = quote(parts.path, safe="/-_.~")  # AWS encodes the received path again (not S3)
    pairs = sorted((quote(unquote(k), safe="-_.~"), quote(unquote(v), safe="-_.~"))
                   for k, _, v in (p.partition("=") for p in parts.query.split("&") if p))
    canonical_query = "&".join(f"{k}={v}" for k, v in pairs)
    canonical_headers = "".join(f"{n}:{' '.join(headers.get(n, '').split())}\n" for n in signed_names.split(";"))
    canonical = "\n".join([method, canonical_path, canonical_query, canonical_headers, signed_names,
                           hashlib.sha256(body).hexdigest()])
    stamp = headers.get("x-amz-date", "")
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode(), day), region), service), "aws4_request")
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature), "signature does not match"
