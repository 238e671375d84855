"""The model API watch (gtd/sandbox/apiwatch.py): statuses read from real HTTP/1.1 byte streams,
keep-alive connections followed across requests, and nothing it cannot parse ever raised."""

from __future__ import annotations

from gtd.sandbox.apiwatch import ApiTrouble, ResponseWatch


def _watch():
    seen: list[ApiTrouble] = []
    return ResponseWatch("127.0.0.1:8080", seen.append), seen


def _post(body: bytes = b'{"model": "m"}') -> bytes:
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _json(status: int, reason: bytes, body: bytes = b'{"error": {"message": "overloaded"}}') -> bytes:
    return (b"HTTP/1.1 " + str(status).encode() + b" " + reason + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


SSE_OK = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
          + _chunk(b'data: {"choices": []}\n\n') + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")


def test_keep_alive_retries_are_each_reported_then_success_is_not():
    watch, seen = _watch()
    for status, reason in ((503, b"Service Unavailable"), (500, b"Internal Server Error")):
        watch.sent(_post())
        watch.received(_json(status, reason))
    watch.sent(_post())
    watch.received(SSE_OK)
    assert [(t.host, t.status, t.reason) for t in seen] == [
        ("127.0.0.1:8080", 503, "Service Unavailable"), ("127.0.0.1:8080", 500, "Internal Server Error")]
    assert watch.active
    assert seen[0].describe("opencode") == "API error (HTTP 503 from 127.0.0.1:8080), opencode is retrying"


def test_rate_limit_is_reported_client_errors_are_not():
    watch, seen = _watch()
    for status, reason in ((404, b"Not Found"), (401, b"Unauthorized"), (429, b"Too Many Requests")):
        watch.sent(_post())
        watch.received(_json(status, reason))
    assert [t.status for t in seen] == [429]


def test_bytes_split_anywhere_and_a_large_request_body():
    watch, seen = _watch()
    request = _post(b"x" * 300_000)
    for i in range(0, len(request), 7001):
        watch.sent(request[i:i + 7001])
    answer = _json(502, b"Bad Gateway") + b""
    for i in range(len(answer)):
        watch.received(answer[i:i + 1])
    watch.sent(_post())
    watch.received(_json(503, b"Service Unavailable"))
    assert [t.status for t in seen] == [502, 503]


def test_a_body_that_looks_like_a_status_line_is_body():
    watch, seen = _watch()
    watch.sent(_post())
    watch.received(_json(200, b"OK", b"HTTP/1.1 503 Service Unavailable\r\n\r\n"))
    assert seen == [] and watch.active


def test_head_answer_has_no_body_and_the_next_answer_is_read():
    watch, seen = _watch()
    watch.sent(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    watch.received(b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n")  # no body after a HEAD
    watch.sent(_post())
    watch.received(_json(503, b"Service Unavailable"))
    assert [t.status for t in seen] == [503]


def test_connection_close_answer_ends_the_watch_quietly():
    watch, seen = _watch()
    watch.sent(_post())
    watch.received(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\nbusy")
    watch.received(b"more bytes after the close")
    assert [t.status for t in seen] == [503]


def test_garbage_and_tls_end_the_watch_without_raising():
    for client, server in ((b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"\x16\x03\x03\x00\x7a\x02"),
                           (_post(), b"SSH-2.0-OpenSSH_9.6\r\n"),
                           (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"a" * 100_000, b"")):
        watch, seen = _watch()
        watch.sent(client)
        watch.received(server)
        watch.received(_json(503, b"Service Unavailable"))
        assert seen == [] and not watch.active


def test_unreachable_is_described_with_its_reason():
    assert ApiTrouble("api.openai.com:443", None, "connection refused").describe("opencode") == \
        "cannot reach api.openai.com:443 (connection refused), opencode is retrying"
