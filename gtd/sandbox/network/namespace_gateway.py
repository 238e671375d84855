"""Everything the host serves into one sandboxed process's network namespace.

- the proxy port (HTTP CONNECT / absolute-form / SOCKS5 with the per-run token);
- intercepted ports: direct connections from clients that ignore proxy variables, decided by the
  same policy (the proxy's `serve_intercepted`);
- DNS: stand-in addresses for names, nothing resolved upstream (`dns.py`);
- host-loopback forwards: 127.0.0.1:PORT inside reaches 127.0.0.1:PORT on the host, only for the
  ports the policy names (`hostLoopbackPorts`, and a model API configured on the host's loopback).
"""

from __future__ import annotations

import socket

from gtd.background import Background
from gtd.sandbox.network.dns import DnsResponder, StandInNames
from gtd.sandbox.linux.netns import NamespaceSockets
from gtd.sandbox.network.proxy import FilteringProxy
from gtd.sandbox.network.relay import close_all, pump as _pump, spawn


class NamespaceGateway:
    def __init__(self, sockets: NamespaceSockets, proxy: FilteringProxy, names: StandInNames):
        self.sockets = sockets
        self.proxy = proxy
        self.names = names
        self._closed = False
        self._threads: list[Background] = []

    def start(self) -> "NamespaceGateway":
        """Each listener's thread is started without waiting for it to be scheduled (gtd.background): a
        sandbox has ~9 of them, and threading.Thread.start() waited for each in turn."""
        self.proxy.serve(self.sockets.proxy)
        for listener in self.sockets.intercept:
            self.proxy.serve_intercepted(listener, self.names.name_for)
        for sock in self.sockets.dns:
            self._threads.append(Background(self._dns_loop, DnsResponder(sock, self.names), on_error=Background.report))
        for port, listeners in self.sockets.forwards.items():
            for listener in listeners:
                self._threads.append(Background(self._forward_loop, listener, port, on_error=Background.report))
        return self

    def close(self) -> None:
        self._closed = True
        self.proxy.stop_serving(self.sockets.proxy, *self.sockets.intercept)
        for sock in [*self.sockets.dns, *(s for group in self.sockets.forwards.values() for s in group)]:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked on it
            except OSError:
                pass
        for thread in self._threads:  # gone before the descriptors close: none can reach a reused number
            thread.join(5)
        for sock in [*self.sockets.dns, *(s for group in self.sockets.forwards.values() for s in group)]:
            sock.close()

    def _dns_loop(self, responder: DnsResponder) -> None:
        while not self._closed:
            try:
                responder.handle_one()
            except OSError:
                if self._closed or responder.sock.fileno() < 0:
                    return

    def _forward_loop(self, listener: socket.socket, port: int) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            spawn(_forward, conn, port)


def _forward(conn: socket.socket, port: int) -> None:
    """Relay one connection to the same port on the host's loopback (IPv4, then IPv6)."""
    upstream = None
    try:
        for address in ("127.0.0.1", "::1"):
            try:
                upstream = socket.create_connection((address, port), timeout=10)
                upstream.settimeout(None)
                break
            except OSError:
                pass
        if upstream is not None:
            _pump(conn, upstream)
    finally:
        close_all(conn, upstream)
