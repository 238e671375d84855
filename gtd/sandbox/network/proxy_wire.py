"""The bytes of the proxy's protocols: HTTP request heads read strictly (anything a server might split
differently is refused), Proxy-Authorization, plain replies, a TLS access_denied alert, SOCKS5 replies.
The decisions are the proxy's (proxy.py); this module only reads and writes."""

from __future__ import annotations

import socket

TLS_ACCESS_DENIED = b"\x15\x03\x03\x00\x02\x02\x31"  # alert record: fatal (2), access_denied (49)


def parse_headers(lines: list[str]) -> list[tuple[str, str]] | None:
    """(name, value) pairs, or None for anything a server might split differently: bare CR/LF or NUL
    inside a line, folded continuation lines, names with spaces."""
    headers = []
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip() or " " in name or any(c in line for c in "\r\n\0"):
            return None
        headers.append((name, value.strip()))
    return headers


def body_length(headers: list[tuple[str, str]]) -> int | None:
    """The request body's length from one Content-Length; None if chunked, repeated or invalid."""
    lengths = [v for k, v in headers if k.lower() == "content-length"]
    if any(k.lower() == "transfer-encoding" for k, _ in headers) or len(set(lengths)) > 1:
        return None
    if not lengths:
        return 0
    return int(lengths[0]) if lengths[0].isdigit() and len(lengths[0]) < 16 else None


def basic_credentials(headers: list[tuple[str, str]]) -> tuple[str, str]:
    """(user, password) of the Proxy-Authorization header; empty strings when there is none."""
    for key, value in headers:
        if key.lower() == "proxy-authorization":
            scheme, _, cred = value.partition(" ")
            if scheme.lower() == "basic":
                import base64  # here: a proxied connection's, not every sandbox start's (~0.5 ms)

                try:
                    user, _, password = base64.b64decode(cred.strip()).decode("utf-8", "replace").partition(":")
                    return user, password
                except ValueError:
                    return "", ""
    return "", ""


def reply(conn: socket.socket, code: int, text: str, extra: str = "", body: str = "") -> None:
    payload = body.encode()
    conn.sendall(
        f"HTTP/1.1 {code} {text}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {len(payload)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + payload
    )


def deny_tls(conn: socket.socket) -> None:
    """Answer a ClientHello with a fatal access_denied alert, read to the end first and the client's
    close waited for: a socket closed with unread input is reset, and the alert with it."""
    try:
        header = recv_exact(conn, 5)
        recv_exact(conn, int.from_bytes(header[3:5], "big"))
        conn.sendall(TLS_ACCESS_DENIED)
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(4096):
            pass
    except (OSError, ValueError):
        pass


def socks_reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ValueError("connection closed mid-handshake")
        buf += chunk
    return buf
