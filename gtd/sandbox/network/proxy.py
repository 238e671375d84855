"""The host-side filtering proxy: HTTP (CONNECT and absolute-form) and SOCKS5 on one port.

It is the only way out of the sandbox's empty network namespace. It decides by *name* (domain
rules, then the session's decider), resolves the name itself exactly once, refuses loopback,
link-local, metadata and host addresses unless the IP literal is explicitly allowed, and dials the
address it checked (no DNS rebinding window). A per-run token in the proxy URL authenticates the
sandbox. Every refused destination is reported, with the reason, to `on_denied`.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import struct
import threading

from gtd.background import Background
from gtd.digest import compare_digest
from gtd.record import record
from gtd.sandbox.network.addresses import forbidden_reason, private_reason
from gtd.sandbox.network.proxy_wire import (basic_credentials, body_length, deny_tls, parse_headers, recv_exact,
                                            reply, socks_reply)
from gtd.sandbox.policy.domains import DomainRules, is_ip, normalise_host, split_host_port, valid_host
from gtd.sandbox.network.relay import ConnectionCap, close_all, copy as _copy, pump as _pump  # the byte-moving half

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable

    Resolver = Callable[[str, int], list[str]]

MAX_HEADER = 64 * 1024
# Connections served at once, two host threads each: package managers open a few dozen in parallel; thousands
# would be an agent exhausting the person's thread limit (ulimit -u). Past the cap new ones are closed.
MAX_CONNECTIONS = 512
# Only a client that sent a loopback address through the proxy gets here (NO_PROXY lists every spelling
# but "[::1]", which httpx rejects: Python's urllib proxies http://[::1]:PORT/).
LOOPBACK_HINT = (
    " (the client sent it through gtd's proxy instead of connecting directly; inside the sandbox loopback is"
    " the sandbox's own: a server started there is reached directly at 127.0.0.1 or localhost; to reach a"
    " service on the host's loopback, add its port to sandbox.levels.<level>.hostLoopbackPorts)"
)
HTTP_METHODS = (b"GET ", b"HEAD ", b"POST ", b"PUT ", b"DELETE ", b"PATCH ", b"OPTIONS ")
BUFSIZE = 256 * 1024
TLS_HANDSHAKE = b"\x16"  # a TLS record of type handshake: the ClientHello of a direct HTTPS connection
PROXY_USER = "gtd"
_PIP_USER = "gtd-pip"  # refusal_tls.PIP_USER, without importing it on every sandbox start


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


SWITCH_INTERVAL = 0.0005  # seconds a busy gtd thread may keep the GIL from a waiting proxy thread (Python's default: 5 ms)


def _answer_promptly() -> None:
    """Make any CPU-bound gtd thread (the live view, parsing the agent's stream) hand the GIL to a waiting
    proxy thread within SWITCH_INTERVAL: each blocking call of a connection's hand-shake gives the GIL away
    and waited up to 5 ms to get it back, so a connection took +25-36 ms to its first byte while gtd was
    busy (benchmarks/bench_proxy.py --busy-interpreter). Process-wide, and only ever lowered; a thread that
    is alone runs on uninterrupted, so an idle gtd pays nothing."""
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)


@record
class Verdict:
    ok: bool
    reason: str = ""
    sock: socket.socket | None = None
    denied: bool = False  # refused by policy (vs. a name or connection failure)
    repeat: bool = False  # refused by policy before, in this run (the first refusal may have been escalated)


class FilteringProxy:
    """One per sandbox session; `serve(listener)` adds a listening socket (one per sandboxed process)."""

    def __init__(
        self,
        rules: DomainRules,
        token: str,
        *,
        ask: Callable[[str, int], bool] | None = None,
        on_denied: Callable[[str, int, str], None] | None = None,
        resolver: Resolver | None = None,
        connect_timeout: float = 15.0,
        tls_refusals=None,
        find_secret: Callable[[bytes], str | None] | None = None,
    ):
        self.rules = rules
        self.token = token
        self._ask = ask
        self._on_denied = on_denied
        self._resolve = resolver or system_resolver
        self._connect_timeout = connect_timeout
        self._approved: set[tuple[str, int]] = set()
        self._ask_lock = threading.Lock()
        self._listeners: dict[socket.socket, Background] = {}  # each listener's accept thread
        self._lock = threading.Lock()
        self._one_way: set[socket.socket] = set()  # plain-HTTP connections: no more client bytes upstream
        self._cap = ConnectionCap(MAX_CONNECTIONS)
        self._refused: set[tuple[str, int]] = set()  # (host, port) refused by policy in this run
        self.tls_refusals = tls_refusals  # gtd.sandbox.network.refusal_tls.TlsRefusals: pip's repeats answered inside TLS
        # What a model-credential placeholder in a request stands for (credential_gateway.py), or None.
        self._find_secret = find_secret

    # -- listeners -------------------------------------------------------------------------
    def serve(self, listener: socket.socket) -> None:
        self._start_accepting(listener, self._handle)

    def _start_accepting(self, listener: socket.socket, handler: Callable[[socket.socket], None]) -> None:
        _answer_promptly()
        with self._lock:  # started without waiting for it to be scheduled (gtd.background): ~9 listeners a sandbox
            self._listeners[listener] = Background(self._accept_loop, listener, handler, on_error=Background.report)

    def stop_serving(self, *listeners: socket.socket) -> None:
        """Stop accepting: each accept thread is woken and gone before its descriptor is closed, so it can
        never call accept() on a socket that later reuses the same descriptor number. All are woken first,
        then waited for: their exits overlap (one after the other, each waited for its thread to be
        scheduled: ~0.5 ms a sandbox, several on a busy machine)."""
        with self._lock:
            threads = [self._listeners.pop(listener, None) for listener in listeners]
        for listener in listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
            except OSError:
                pass
        for thread in threads:
            if thread is not None and not thread.running_here():
                thread.join(5)
        for listener in listeners:
            listener.close()

    def close(self) -> None:
        self.stop_serving(*list(self._listeners))

    def serve_intercepted(self, listener: socket.socket, names: Callable[[str], str | None]) -> None:
        """Serve a listener that catches direct connections (clients that ignore proxy variables):
        the address a connection was sent to names its destination (`names` maps gtd's DNS stand-in
        addresses back to names), and the usual policy decides."""
        self._start_accepting(listener, lambda conn: self._handle_intercepted(conn, names))

    def _accept_loop(self, listener: socket.socket, handler: Callable[[socket.socket], None]) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            self._cap.spawn(handler, conn)

    def _handle_intercepted(self, conn: socket.socket, names: Callable[[str], str | None]) -> None:
        upstream = None
        try:
            address, port = conn.getsockname()[:2]
            address = normalise_host(address)
            if ipaddress.ip_address(address).is_loopback:
                return  # the sandbox's own loopback: nothing of the sandbox listens on this port
            host = names(address) or address
            verdict = self.authorize(host, port)
            if not verdict.ok:
                self._refuse_direct(conn, host, port, verdict.reason)
                return
            upstream = verdict.sock
            _pump(conn, upstream)
        except (OSError, ValueError):
            pass
        finally:
            close_all(conn, upstream)

    @staticmethod
    def _refuse_direct(conn: socket.socket, host: str, port: int, reason: str) -> None:
        """A plain-HTTP client gets gtd's message as a 403; a TLS client a fatal `access_denied` alert
        (its error then says access denied, which clients do not retry, where a reset is retried as a
        flaky network); any other protocol (ssh) is closed. gtd reports the refusal on screen."""
        conn.settimeout(2)
        try:
            first = conn.recv(16, socket.MSG_PEEK)
        except OSError:
            return
        if first[:1] == TLS_HANDSHAKE:
            deny_tls(conn)
            return
        if first.startswith(HTTP_METHODS):
            head = b""
            try:  # read the request head first: closing with unread data would reset the reply away
                while b"\r\n\r\n" not in head and len(head) < MAX_HEADER:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    head += chunk
            except OSError:
                pass
            target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            reply(conn, 403, "Forbidden", body=f"gtd sandbox: {target} refused: {reason}\n")
            conn.shutdown(socket.SHUT_WR)

    # -- policy ------------------------------------------------------------------------------
    def authorize(self, host: str, port: int) -> Verdict:
        """Decide, resolve once, check the address, dial. Refusals are reported to on_denied."""
        host = normalise_host(host)
        if not valid_host(host):
            return self._deny(host[:300], port, "invalid host name")
        decision = self.rules.decide(host, port)
        if decision == "deny":
            return self._deny(host, port, "denied by rule")
        literal = forbidden_reason(host) if is_ip(host) else None
        if literal and not self.rules.explicitly_allows_address(host, port):
            # Never offered for approval: an approval must not open the host's loopback or metadata.
            return self._deny(host, port, literal + (LOOPBACK_HINT if "loopback" in literal else ""))
        if decision == "unknown" and (host, port) not in self._approved:
            if self._ask is None:
                return self._deny(host, port, "not in the allow list")
            with self._ask_lock:
                if (host, port) not in self._approved:
                    try:
                        allowed = bool(self._ask(host, port))
                    except Exception as exc:  # noqa: BLE001 - a failing decider must fail closed
                        return self._deny(host, port, f"decider failed: {exc}")
                    if not allowed:
                        return self._deny(host, port, "not approved")
                    self._approved.add((host, port))
        try:
            addresses = [host] if is_ip(host) else self._resolve(host, port)
        except OSError as exc:
            return Verdict(False, f"cannot resolve {host}: {exc}")
        refused = []
        # A name a rule names, or one the person approved (they saw it), may resolve to a private
        # address (an internal mirror); one allowed only by `*` may not (DNS rebinding).
        named = (host, port) in self._approved or (not is_ip(host) and self.rules.names_host(host, port))
        for addr in addresses:
            addr = normalise_host(addr)
            if self.rules.decide(addr, port) == "deny":  # a deny rule on the address holds for any name
                refused.append(f"{addr} (denied by rule)")
                continue
            explicit = self.rules.explicitly_allows_address(addr, port)
            why = forbidden_reason(addr) or (None if named else private_reason(addr))
            if why and not explicit:
                refused.append(f"{addr} ({why})")
                continue
            try:
                sock = socket.create_connection((addr, port), timeout=self._connect_timeout)
                sock.settimeout(None)
                return Verdict(True, sock=sock)
            except OSError as exc:
                last = f"cannot connect to {addr}:{port}: {exc}"
        if refused:
            return self._deny(host, port, "resolves to " + ", ".join(refused))
        # An allowed host that cannot be reached: the client gets 502/504 ("cannot reach"), not a refusal.
        return Verdict(False, last if addresses else f"{host} has no address")

    def _deny(self, host: str, port: int, reason: str) -> Verdict:
        with self._lock:
            repeat = (host, port) in self._refused
            self._refused.add((host, port))
        if self._on_denied is not None:
            try:
                self._on_denied(host, port, reason)
            except Exception:  # noqa: BLE001 - reporting must not break the proxy
                pass
        return Verdict(False, reason, denied=True, repeat=repeat)

    def _token_ok(self, password: str) -> bool:
        return compare_digest(password.encode(), self.token.encode())

    # -- protocols ---------------------------------------------------------------------------
    def _handle(self, conn: socket.socket) -> None:
        upstream = None
        try:
            conn.settimeout(30)
            first = conn.recv(1, socket.MSG_PEEK)
            if not first:
                return
            if first == b"\x05":
                upstream = self._socks5(conn)
            else:
                upstream = self._http(conn)
            if upstream is not None:
                conn.settimeout(None)
                if conn in self._one_way:  # plain HTTP: the request is sent; only the response flows
                    _copy(upstream, conn)
                else:
                    _pump(conn, upstream)
        except (OSError, ValueError):
            pass
        finally:
            self._one_way.discard(conn)
            close_all(conn, upstream)

    def _http(self, conn: socket.socket) -> socket.socket | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
            if len(data) > MAX_HEADER:
                reply(conn, 431, "Request Header Fields Too Large")
                return None
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ", 2)
        except ValueError:
            reply(conn, 400, "Bad Request")
            return None
        headers = parse_headers(lines[1:])
        if headers is None or "\n" in lines[0] or "\0" in lines[0]:
            reply(conn, 400, "Bad Request", body="gtd sandbox: malformed request header\n")
            return None
        user, password = basic_credentials(headers)
        if not self._token_ok(password):
            reply(conn, 407, "Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="gtd"\r\n')
            return None
        if method.upper() == "CONNECT":
            if self._carries_placeholder(conn, head, target, 443):
                return None
            verdict = self._authorize_target(conn, target, 443, tunnel_for=user)
            if verdict is None:
                return None
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                verdict.sock.sendall(rest)
            return verdict.sock
        # Plain HTTP through the proxy: absolute-form target, forwarded as exactly one request with
        # Host set to the authorised authority (a different Host is domain fronting on a shared CDN)
        # and exactly its declared body (anything after it would be a second, unchecked request).
        if not target.lower().startswith("http://"):
            reply(conn, 400, "Bad Request", body="gtd sandbox: only CONNECT and http:// requests are proxied\n")
            return None
        authority, slash, path = target[7:].partition("/")
        path, _, _ = path.partition("#")
        length = body_length(headers)
        if "@" in authority or length is None:
            reply(conn, 400, "Bad Request", body="gtd sandbox: userinfo, chunked or ambiguous bodies are not proxied\n")
            return None
        if self._carries_placeholder(conn, head, authority, 80):
            return None
        verdict = self._authorize_target(conn, authority, 80)
        if verdict is None:
            return None
        while len(rest) < length:
            chunk = conn.recv(min(BUFSIZE, length - len(rest)))
            if not chunk:
                break
            rest += chunk
        if self._carries_placeholder(conn, rest[:length], authority, 80):
            verdict.sock.close()
            return None
        skip = {"proxy-authorization", "proxy-connection", "connection", "keep-alive", "host"}
        out = [f"{method} /{path if slash else ''} {version}", f"Host: {authority}"]
        out += [f"{k}: {v}" for k, v in headers if k.lower() not in skip]
        out.append("Connection: close")
        request = ("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + rest[:length]
        verdict.sock.sendall(request)
        self._one_way.add(conn)
        return verdict.sock

    def _carries_placeholder(self, conn: socket.socket, data: bytes, authority: str, default_port: int) -> bool:
        """Refuse (403, reported) a request carrying a model credential's placeholder: only gtd's credential
        gateway exchanges it for the key, so anywhere else it is an attempt to exfiltrate that key."""
        what = self._find_secret(data) if self._find_secret is not None else None
        if what is not None:
            host, _, port = authority.rpartition(":") if authority.rpartition(":")[2].isdigit() else (authority, "", "")
            _refuse(conn, authority, self._deny(host[:300], int(port or default_port), f"exfiltration attempt: the "
                    f"request carries the placeholder for {what}, which only gtd's model gateway may receive"))
        return what is not None

    def _authorize_target(self, conn: socket.socket, authority: str,
                          default_port: int, tunnel_for: str | None = None) -> Verdict | None:
        """The allowing verdict for a request's host[:port], or None once the client
        was answered: 400 for a malformed authority, the refusal otherwise. `tunnel_for`: a
        CONNECT's proxy user; pip's (refusal_tls) is refused inside TLS once the host was refused before."""
        try:
            host, port = split_host_port(authority)
        except ValueError:
            reply(conn, 400, "Bad Request")
            return None
        verdict = self.authorize(host, port or default_port)
        if not verdict.ok:
            if verdict.denied and self.tls_refusals is not None and tunnel_for == _PIP_USER:
                if verdict.repeat and self.tls_refusals.refuse(conn, normalise_host(host), _refusal_text(authority, verdict)):
                    return None
                self.tls_refusals.prepare()  # before the first answer: pip's first retry comes without delay
            _refuse(conn, authority, verdict)
            return None
        return verdict

    def _socks5(self, conn: socket.socket) -> socket.socket | None:
        ver, n = recv_exact(conn, 2)
        methods = recv_exact(conn, n)
        if 0x02 not in methods:  # username/password: the token is the password
            conn.sendall(b"\x05\xff")
            return None
        conn.sendall(b"\x05\x02")
        _, ulen = recv_exact(conn, 2)
        recv_exact(conn, ulen)
        (plen,) = recv_exact(conn, 1)
        password = recv_exact(conn, plen).decode("utf-8", "replace")
        if not self._token_ok(password):
            conn.sendall(b"\x01\x01")
            return None
        conn.sendall(b"\x01\x00")
        _, cmd, _, atyp = recv_exact(conn, 4)
        if atyp == 1:
            host = socket.inet_ntop(socket.AF_INET, recv_exact(conn, 4))
        elif atyp == 4:
            host = socket.inet_ntop(socket.AF_INET6, recv_exact(conn, 16))
        elif atyp == 3:
            (length,) = recv_exact(conn, 1)
            host = recv_exact(conn, length).decode("ascii")  # no IDNA round trip: checked as sent
        else:
            conn.sendall(socks_reply(8))
            return None
        (port,) = struct.unpack("!H", recv_exact(conn, 2))
        if cmd != 1:
            conn.sendall(socks_reply(7))  # only CONNECT: no BIND, no UDP ASSOCIATE (no DNS over UDP)
            return None
        verdict = self.authorize(host, port)
        if not verdict.ok:
            conn.sendall(socks_reply(2 if verdict.denied else 4))
            return None
        conn.sendall(socks_reply(0))
        return verdict.sock


def _refuse(conn: socket.socket, target: str, verdict: Verdict) -> None:
    """403 for what the policy refuses (an escalation can change that); for a host that is allowed
    but unreachable, 502 (or 504 when the connection timed out): "cannot reach", never "refused"."""
    if verdict.denied:
        reply(conn, 403, "Forbidden", body=_refusal_text(target, verdict))
    elif "timed out" in verdict.reason:
        reply(conn, 504, "Gateway Timeout", body=f"gtd sandbox: cannot reach {target}: {verdict.reason}\n")
    else:
        reply(conn, 502, "Bad Gateway", body=f"gtd sandbox: cannot reach {target}: {verdict.reason}\n")


def _refusal_text(target: str, verdict: Verdict) -> str:
    return f"gtd sandbox: {target} refused: {verdict.reason}\n"
