"""The filtering proxy's throughput and connection set-up, against direct loopback in the same run.

A local server sends a file with sendfile(2); curl fetches it (a) directly, (b) through gtd's proxy
with CONNECT (the tunnel every HTTPS client uses) and (c) as a plain-HTTP proxy request. Set-up
latency: a fresh connection that receives one byte, direct vs. through CONNECT (the proxy's parse,
policy decision, resolve and dial included). Target (issue 13): proxied throughput >= 80 % of direct.
The proxy runs in this process, as in a sandbox session; bench_sandbox.py measures it from inside bwrap.

Run: .venv/bin/python benchmarks/bench_proxy.py [--mb 256] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import cleanup, table, temp_dir  # noqa: E402

TARGET = 0.80
TOKEN = "bench-token"


class _Listener:
    """A loopback listener handing each accepted connection to `_handle` until it is closed."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self._handle(conn)

    def _handle(self, conn: socket.socket) -> None:
        raise NotImplementedError


class FileServer(_Listener):
    """Answers every request with one HTTP response whose body is `path`, sent with sendfile."""

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size
        super().__init__()

    def _handle(self, conn: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {self.size}\r\nConnection: close\r\n\r\n".encode())
            with open(self.path, "rb") as f:
                conn.sendfile(f)


class ByteServer(_Listener):
    """Sends one byte to each connection: the set-up latency probe."""

    def _handle(self, conn: socket.socket) -> None:
        conn.sendall(b"x")
        conn.close()


def curl_seconds(url: str, proxy: list[str]) -> float:
    out = subprocess.run(["curl", "-sS", "--noproxy", "" if proxy else "*", *proxy, "-o", "/dev/null",
                          "-w", "%{time_total}", url], capture_output=True, text=True, check=True)
    return float(out.stdout)


def connect_direct(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        assert s.recv(1) == b"x"


def connect_via_proxy(proxy_port: int, port: int) -> None:
    import base64

    auth = base64.b64encode(f"gtd:{TOKEN}".encode()).decode()
    with socket.create_connection(("127.0.0.1", proxy_port)) as s:
        s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  f"Proxy-Authorization: Basic {auth}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += s.recv(4096)
        head, rest = reply.split(b"\r\n\r\n", 1)
        assert b" 200 " in head.split(b"\r\n")[0], head
        assert (rest or s.recv(1)) == b"x"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256, help="size of the download")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--connects", type=int, default=200)
    args = ap.parse_args()

    from gtd.sandbox.domains import DomainRules
    from gtd.sandbox.proxy import FilteringProxy

    tmp = temp_dir("gtd-bench-proxy-")
    try:
        blob = tmp / "blob"
        with open(blob, "wb") as f:
            chunk = os.urandom(1024 * 1024)
            for _ in range(args.mb):
                f.write(chunk)
        files, probe = FileServer(blob), ByteServer()
        rules = DomainRules.parse([f"127.0.0.1:{files.port}", f"127.0.0.1:{probe.port}"], [])
        proxy = FilteringProxy(rules, TOKEN)
        listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        proxy.serve(listener)
        proxy_url = f"http://gtd:{TOKEN}@127.0.0.1:{listener.getsockname()[1]}"
        url = f"http://127.0.0.1:{files.port}/blob"

        from gtd.sandbox import relay

        tunnel = ["--proxytunnel", "--proxy", proxy_url]
        cases = {"direct": [], "CONNECT tunnel": tunnel, "plain HTTP proxy": ["--proxy", proxy_url],
                 "CONNECT, userspace copy": tunnel}  # the relay without splice, for comparison
        samples: dict[str, list[float]] = {name: [] for name in cases}
        spliced = relay._SPLICE
        for _ in range(args.runs + 1):  # the first round warms up
            for name, flags in cases.items():
                relay._SPLICE = None if name == "CONNECT, userspace copy" else spliced
                samples[name].append(curl_seconds(url, flags))
        relay._SPLICE = spliced
        samples = {name: values[1:] for name, values in samples.items()}
        mbps = {name: args.mb * 1.048576 / statistics.median(values) for name, values in samples.items()}

        latency: dict[str, list[float]] = {"direct": [], "CONNECT": []}
        proxy_port = listener.getsockname()[1]
        for _ in range(args.connects):
            t = time.perf_counter()
            connect_direct(probe.port)
            latency["direct"].append((time.perf_counter() - t) * 1e6)
            t = time.perf_counter()
            connect_via_proxy(proxy_port, probe.port)
            latency["CONNECT"].append((time.perf_counter() - t) * 1e6)
        direct_us, proxied_us = (statistics.median(latency[k]) for k in ("direct", "CONNECT"))

        rows = [("direct loopback download", f"{mbps['direct']:.0f} MB/s", "1.00x", "", None)]
        for name in ("CONNECT tunnel", "plain HTTP proxy", "CONNECT, userspace copy"):
            share = mbps[name] / mbps["direct"]
            target = name != "CONNECT, userspace copy"
            rows.append((f"through the proxy ({name})", f"{mbps[name]:.0f} MB/s", f"{share:.0%} of direct",
                         f">= {TARGET:.0%}" if target else "(reference)", share >= TARGET if target else None))
        rows.append(("connection set-up, direct", f"{direct_us:.0f} us", "1.00x", "", None))
        rows.append(("connection set-up, CONNECT via proxy", f"{proxied_us:.0f} us",
                     f"+{proxied_us - direct_us:.0f} us", "(reported)", None))
        print(f"Proxy: {args.mb} MB download, median of {args.runs} interleaved runs; set-up: median of {args.connects}")
        print(table(rows))
        proxy.close()
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
