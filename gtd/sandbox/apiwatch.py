"""What the sandbox's network layer sees of the model API's health, for the person watching.

A CLI that retries failed API requests silently looks frozen (opencode's JSON stream says nothing
while it backs off on HTTP 5xx for over a minute; gtd now reads its error log instead, see
providers/opencode.py). Every model API request passes through gtd's host side (the
filtering proxy, or the host-loopback forward of a model API served on this machine), so gtd can
say what is happening:

- plain-HTTP model APIs (a local server, a gateway at `http://...`): each response's status line is
  read as it passes (h11 tracks the framing in both directions, so keep-alive connections that carry
  many requests are followed); 429 and 5xx are reported;
- any model API, HTTPS included: a connection gtd cannot make (refused, timed out, no address) is
  reported as "cannot reach". Inside TLS nothing is readable: a 5xx there stays invisible.

Watching never changes a byte and never stops the relay: anything the parser does not understand
ends the watch of that connection, not the connection.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ApiTrouble:
    """One failed model API request (status 429/5xx) or one failed connection (status None)."""

    host: str  # "host:port" as the model host rule names it
    status: int | None = None
    reason: str = ""

    def describe(self, cli: str) -> str:
        if self.status is not None:
            return f"API error (HTTP {self.status} from {self.host}), {cli} is retrying"
        return f"cannot reach {self.host}" + (f" ({self.reason})" if self.reason else "") + f", {cli} is retrying"


Report = Callable[[ApiTrouble], None]


def is_trouble(status: int) -> bool:
    """The statuses a client retries: rate limited, or a server/gateway error."""
    return status == 429 or 500 <= status <= 599


class ResponseWatch:
    """Follows one HTTP/1.x connection (client bytes through `sent`, server bytes through `received`)
    and reports every 429/5xx response. Thread-safe: the two directions are pumped by two threads."""

    def __init__(self, host: str, report: Report):
        import h11

        self._h11 = h11
        self.host = host
        self._report = report
        self._requests = h11.Connection(h11.SERVER)  # parses what the client sends
        self._responses = h11.Connection(h11.CLIENT)  # parses what the server answers
        self._methods: deque[bytes] = deque()  # requests seen, not yet answered (HEAD has no body)
        self._lock = threading.Lock()
        self.active = True

    def sent(self, data: bytes) -> None:
        self._feed(self._read_requests, data)

    def received(self, data: bytes) -> None:
        self._feed(self._read_responses, data)

    def _feed(self, reader: Callable[[bytes], None], data: bytes) -> None:
        with self._lock:
            if not self.active:
                return
            try:
                reader(data)
            except Exception:  # noqa: BLE001 - a protocol this parser cannot follow ends the watch only
                self.active = False

    def _read_requests(self, data: bytes) -> None:
        h11, conn = self._h11, self._requests
        conn.receive_data(data)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                break
            if event is h11.PAUSED:
                break
            if isinstance(event, h11.Request):
                self._methods.append(bytes(event.method))
            elif isinstance(event, h11.EndOfMessage):
                # The real answer is followed on the other side; this parser only needs to move on.
                conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                conn.send(h11.EndOfMessage())
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                else:
                    break
        self._read_responses(b"")

    def _read_responses(self, data: bytes) -> None:
        h11, conn = self._h11, self._responses
        if data:
            conn.receive_data(data)
        while True:
            if conn.our_state is h11.IDLE:
                if not self._methods:
                    return  # the answer to a request not parsed yet: its bytes wait in h11's buffer
                method = self._methods.popleft()
                conn.send(h11.Request(method=method, target="/", headers=[("Host", "model"), ("Content-Length", "0")]))
                conn.send(h11.EndOfMessage())
            event = conn.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                if event is h11.PAUSED:
                    self.active = False  # a protocol switch: nothing more to read as HTTP
                return
            if isinstance(event, h11.Response) and is_trouble(event.status_code):
                self._report(ApiTrouble(self.host, event.status_code, bytes(event.reason).decode("latin-1")))
            elif isinstance(event, h11.EndOfMessage):
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                else:
                    self.active = False  # the connection closes after this answer
                    return

