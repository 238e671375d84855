"""One request through the credential gateway (credential_gateway.py): read from the sandbox, the real
credential put into its auth header, sent to the route's upstream, the answer streamed back.

One request per connection (the answer ends with the connection): no request smuggling between a
checked first request and an unchecked second one, and a streamed answer needs no re-framing. The
request body is read whole (a model request is a JSON document), the response is passed on as it
arrives, read with `read1` so that each server-sent event goes on at once.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit

AUTH_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "api-key")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
              "host", "content-length", "proxy-authorization", "accept-encoding", "expect"}
# What a cloud SDK signs with its own (placeholder) credentials: dropped before the host's signer signs again.
SIGNED_PREFIXES = ("x-amz-date", "x-amz-security-token", "x-amz-content-sha256")
MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024  # a conversation with images stays far below
UPSTREAM_SECONDS = 900.0  # a model that thinks long before its first byte
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110's token: no space, no fold, nothing to misread


def forward(gateway, conn: socket.socket) -> None:
    """Serve one request on `conn` for `gateway` (a credential_gateway.CredentialGateway)."""
    head, rest = _read_head(conn)
    if head is None:
        return
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, _version = lines[0].split(" ", 2)
    except ValueError:
        _reply(conn, 400, "Bad Request", "gtd model gateway: malformed request line\n")
        return
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not HEADER_NAME.fullmatch(name) or any(c in line for c in "\r\n\0"):
            _reply(conn, 400, "Bad Request", "gtd model gateway: malformed request header\n")
            return
        headers.append((name, value.strip()))
    route_name, _, rest_path = target.lstrip("/").partition("/")
    route = gateway.routes.get(route_name)
    if route is None or not target.startswith("/"):
        _reply(conn, 404, "Not Found", f"gtd model gateway: no model API route {route_name!r} "
                                       f"(routes: {', '.join(sorted(gateway.routes)) or 'none'})\n")
        return
    if any(k.lower() == "expect" and v.lower() == "100-continue" for k, v in headers) and not rest:
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")  # curl waits a second for it before a larger body
    body = _read_body(conn, headers, rest)
    if body is None:
        _reply(conn, 400, "Bad Request", "gtd model gateway: a request body it could not read (length)\n")
        return
    out: list[tuple[str, str]] = []
    signer = route.signer
    signed_for = False  # a signer route signs only a request that carries this session's placeholder
    for name, value in headers:
        low = name.lower()
        if low in HOP_BY_HOP:
            continue
        if low in AUTH_HEADERS:
            value, refused = gateway.real_credential(route_name, value)
            if value is None:
                _reply(conn, 403, "Forbidden", f"gtd model gateway: refused: {refused}\n")
                return
            if signer is not None:  # the signer puts in the whole authorization itself
                signed_for = signed_for or gateway.login_placeholders.get(route_name, "\0") in value
                continue
        elif signer is not None and low.startswith(SIGNED_PREFIXES):
            continue
        out.append((name, value))
    upstream_url = (signer.upstream(rest_path) if signer is not None else None) or route.upstream
    upstream = urlsplit(upstream_url)
    path = upstream.path.rstrip("/") + "/" + rest_path
    if signer is not None:
        if not signed_for:
            _reply(conn, 403, "Forbidden", f"gtd model gateway: refused: the {route_name} route signs only "
                                           "requests that carry this session's placeholder\n")
            return
        refused = signer.refuses(method, rest_path)
        if refused:
            gateway.misuse(route_name, f"a use of your cloud identity beyond model calls: {refused}")
            _reply(conn, 403, "Forbidden", f"gtd model gateway: refused: {refused}\n")
            return
        try:
            out += signer.sign(method, f"{upstream.scheme}://{upstream.netloc}{path}", out, body)
        except Exception as exc:  # noqa: BLE001 - no credentials on the host, an expired login: the CLI hears why
            _reply(conn, 502, "Bad Gateway", f"gtd model gateway: cannot sign for {route_name}: "
                                             f"{gateway.scrub(str(exc))}\n")
            return
    _send_upstream(gateway, conn, upstream, method, path, out, body)


def _send_upstream(gateway, conn, upstream, method: str, path: str, headers, body: bytes) -> None:
    import http.client

    port = upstream.port
    if upstream.scheme == "https":
        import ssl

        client = http.client.HTTPSConnection(upstream.hostname, port, timeout=UPSTREAM_SECONDS,
                                             context=ssl.create_default_context())
    else:
        client = http.client.HTTPConnection(upstream.hostname, port, timeout=UPSTREAM_SECONDS)
    try:
        client.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers:
            client.putheader(name, value)
        if body or method.upper() in ("POST", "PUT", "PATCH"):
            client.putheader("Content-Length", str(len(body)))
        client.endheaders(body or None)
        response = client.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        client.close()
        why = gateway.scrub(f"{type(exc).__name__}: {exc}")
        _reply(conn, 502, "Bad Gateway", f"gtd model gateway: cannot reach {upstream.scheme}://{upstream.netloc}: "
                                         f"{why}\n")
        return
    try:
        _stream_back(gateway, conn, response)
    finally:
        client.close()


def _stream_back(gateway, conn: socket.socket, response) -> None:
    lines = [f"HTTP/1.1 {response.status} {response.reason}"]
    for name, value in response.getheaders():
        if name.lower() not in HOP_BY_HOP:
            lines.append(f"{name}: {value}")
    if response.status >= 400:  # an error may echo the key it was sent: read whole, scrubbed
        payload = gateway.scrub(response.read().decode("utf-8", "replace")).encode()
        lines += [f"Content-Length: {len(payload)}", "Connection: close"]
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
        return
    lines.append("Connection: close")  # the body ends with the connection: streamed as it comes
    conn.settimeout(None)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    while True:
        chunk = response.read1(65536)
        if not chunk:
            break
        conn.sendall(chunk)
    try:
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _read_head(conn: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
        if len(data) > MAX_HEAD:
            _reply(conn, 431, "Request Header Fields Too Large", "gtd model gateway: request head too large\n")
            return None, b""
    head, rest = data.split(b"\r\n\r\n", 1)
    return head, rest


def _read_body(conn: socket.socket, headers, rest: bytes) -> bytes | None:
    """The request body, by Content-Length or chunked; None when neither can be read."""
    lengths = {v for k, v in headers if k.lower() == "content-length"}
    chunked = any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers)
    if chunked:
        return _read_chunked(conn, rest)
    if len(lengths) > 1:
        return None
    length = lengths.pop() if lengths else "0"
    if not length.isdigit() or int(length) > MAX_BODY:
        return None
    want = int(length)
    while len(rest) < want:
        chunk = conn.recv(min(1 << 20, want - len(rest)))
        if not chunk:
            return None
        rest += chunk
    return rest[:want]


def _read_chunked(conn: socket.socket, data: bytes) -> bytes | None:
    body = b""
    while True:
        while b"\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return None
            data += more
        size_line, data = data.split(b"\r\n", 1)
        try:
            size = int(size_line.split(b";")[0].strip() or b"x", 16)
        except ValueError:
            return None
        if size == 0:
            return body
        if len(body) + size > MAX_BODY:
            return None
        while len(data) < size + 2:
            more = conn.recv(1 << 20)
            if not more:
                return None
            data += more
        body += data[:size]
        data = data[size + 2:]


def _reply(conn: socket.socket, code: int, text: str, body: str) -> None:
    payload = body.encode()
    try:
        conn.sendall(f"HTTP/1.1 {code} {text}\r\nContent-Type: text/plain\r\nContent-Length: {len(payload)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + payload)
    except OSError:
        pass
