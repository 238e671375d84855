"""The filtering proxy's throughput and connection set-up, against direct loopback in the same run.

A file server in its own process (as a real registry is) sends a body of each size with sendfile(2).
Every round measures each case once, in turn, so load on a shared machine hits all cases alike: a case is
`--batch` downloads run back to back by one shell (one sandboxed command), and its value in the round is
their median. The tables show medians over the rounds; a ratio is the median of each round's own ratio (its
two batches ran back to back), with the lowest and highest round beside it.

1. In process (the proxy as a sandbox session runs it, without the sandbox): curl fetches each size
   directly, through a CONNECT tunnel (what every HTTPS client uses) and as a plain-HTTP proxy request.
   Set-up latency: a fresh connection that receives one byte, direct vs. through CONNECT (parse,
   token, policy decision, dial and relay start included). CPU: what the file server, this process
   (the proxy) and curl spent per download, median; steadier than wall time on a busy machine, and
   what a fully loaded machine's throughput follows.
2. From inside a real sandbox (bwrap, empty network namespace): the same downloads and set-up probes
   through the proxy port with CONNECT and through the transparent-interception path (a client that
   ignores proxy variables dials the address itself), against the same client run outside.

With `--relay-from REV` the in-process half also runs CONNECT through a second proxy built from
gtd/sandbox/network/proxy.py, relay.py and relay.c as they were at git revision REV, in the same rounds: a before/after on
one machine state. With `--load N`, N busy loops (one process each) run for the whole measurement, so
"under load" is the same load for every case; the load average is printed before and after either way.
With `--busy-interpreter`, a CPU-bound Python thread runs in the proxy's own process, as gtd's own work
(parsing an agent's output, drawing the live view) can: a relay loop in Python then waits for the GIL.
Today's proxy relays with relay.c's loop when it can be built (gtd/sandbox/network/nativerelay.py); the line with
the load average says which loop it used.

Target (issue 13): proxied throughput >= 80 % of direct, judged on the data phase: size / (curl's
time_total - time_starttransfer), the body moving from its first byte to its last. The whole download
(time_total, set-up included) is a row of its own, and so is the time to the first byte beside the set-up
probe: the set-up cost is shown, not hidden. Nothing here asserts a time.

Run: .venv/bin/python benchmarks/bench_proxy.py [--sizes 4,32,128] [--runs 7] [--batch 5] [--connects 200] [--no-sandbox]
         [--relay-from REV] [--load N] [--busy-interpreter]
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import resource
import shlex
import shutil
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
REGISTRY = "registry.test"

# Runs as `python -c PROBE <mode> <port> <count> <host> [proxy url]` outside and inside the sandbox, `mode`
# direct|connect, or direct-exchange|connect-exchange. Set-up: the median microseconds from connect() to
# the first byte of a fresh connection, `count` connections. Exchange: on one connection, the median
# microseconds of `count` request/response exchanges, each message written in two pieces by a client
# and a server that both send at once (TCP_NODELAY), as TLS records or a request's head and body are.
PROBE = r"""
import base64, socket, statistics, sys, time, urllib.parse
mode, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
host = sys.argv[4]
proxy = urllib.parse.urlsplit(sys.argv[5]) if len(sys.argv) > 5 else None

def open_connection():
    if mode.startswith("connect"):
        s = socket.create_connection((proxy.hostname, proxy.port))
        auth = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = s.recv(4096)
            assert chunk, reply
            reply += chunk
        head, rest = reply.split(b"\r\n\r\n", 1)
        assert b" 200 " in head.split(b"\r\n")[0], head
        assert (rest or s.recv(1)) == b"x"
    else:
        s = socket.create_connection((host, port))
        assert s.recv(1) == b"x"
    return s

samples = []
if mode.endswith("exchange"):
    s = open_connection()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(count):
        t = time.perf_counter()
        s.sendall(b"q" * 100)
        time.sleep(0.0002)
        s.sendall(b"q" * 100)
        assert s.recv(200, socket.MSG_WAITALL) == b"a" * 200
        samples.append((time.perf_counter() - t) * 1e6)
    s.close()
else:
    for _ in range(count):
        t = time.perf_counter()
        s = open_connection()
        samples.append((time.perf_counter() - t) * 1e6)
        s.close()
print(statistics.median(samples))
"""


# -- the servers (a separate process: a real registry does not share the proxy's interpreter) --------

def serve(directory: Path) -> None:
    """`bench_proxy.py --serve DIR`: a sendfile file server and a one-byte probe server on loopback;
    prints their ports as JSON, serves until stdin closes."""
    files = socket.create_server(("127.0.0.1", 0), backlog=128)
    probe = socket.create_server(("127.0.0.1", 0), backlog=128)

    def send_file(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            name = data.split(b" ", 2)[1].decode().lstrip("/")
            path = directory / name
            size = path.stat().st_size
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n".encode())
            with open(path, "rb") as f:
                conn.sendfile(f)

    def accept(listener: socket.socket, handle) -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    def one_byte(conn: socket.socket) -> None:
        """One byte, then answers each 200-byte message with 200 bytes written in two pieces, until EOF."""
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.sendall(b"x")
            while len(conn.recv(200, socket.MSG_WAITALL)) == 200:
                conn.sendall(b"a" * 100)
                conn.sendall(b"a" * 100)

    threading.Thread(target=accept, args=(files, send_file), daemon=True).start()
    threading.Thread(target=accept, args=(probe, one_byte), daemon=True).start()
    print(json.dumps({"files": files.getsockname()[1], "probe": probe.getsockname()[1]}), flush=True)
    sys.stdin.read()


def start_servers(directory: Path) -> tuple[subprocess.Popen, int, int]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(directory)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    ports = json.loads(proc.stdout.readline())
    return proc, ports["files"], ports["probe"]


# -- measuring ---------------------------------------------------------------------------------------

def curl_timers(run, url: str, flags: list[str], batch: int) -> list[tuple[float, float]]:
    """curl's (time_starttransfer, time_total) in seconds, for each of `batch` downloads run one after
    another by one shell: the first byte of the response, the last. Before the first byte lie the
    connection's set-up (connect, the CONNECT exchange, the policy decision, the dial) and the request's
    round trip; after it, only the body moving. A batch per command keeps a sandboxed command's own start
    and end (tens of milliseconds of bwrap, cgroup and mount work) out of the downloads it times."""
    command = " ".join(["curl", "-sS", *(shlex.quote(f) for f in flags), "-o", "/dev/null", "-w",
                        shlex.quote("%{time_starttransfer} %{time_total}\\n"), shlex.quote(url)])
    out = run(["/bin/sh", "-c", f"for i in $(seq {batch}); do {command} || exit 1; done"])
    return [(float(first), float(last)) for first, last in (line.split() for line in out.splitlines())]


def local(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def rounds(cases: dict[str, callable], runs: int) -> dict[str, list[float]]:
    """Each case once per round, in turn, every other round in reverse order (no case always runs first or
    right after another); one warm-up round first."""
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for n in range(runs + 1):
        for name, fn in (cases.items() if n % 2 else reversed(cases.items())):
            value = fn()
            if n:
                samples[name].append(value)
    return samples


def cpu_seconds(server_pid: int) -> float:
    """CPU time so far of the file server, this process (the proxy's threads) and its reaped children (curl)."""
    fields = Path(f"/proc/{server_pid}/stat").read_text().rsplit(")", 1)[1].split()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + time.process_time()
            + children.ru_utime + children.ru_stime)


def with_cpu(fn: callable, server_pid: int, into: list[float], downloads: int) -> callable:
    """fn, with the CPU that server, proxy and client spent per download during each call appended to `into`."""
    def measured() -> float:
        before = cpu_seconds(server_pid)
        value = fn()
        into.append((cpu_seconds(server_pid) - before) / downloads)
        return value
    return measured


def cpu_rows(cpu: dict[str, list[float]], sizes: list[int], proxied: list[str], label: str) -> list[tuple]:
    rows = []
    for mb in sizes:
        base = statistics.median(cpu[f"direct {mb}"]) * 1000
        rows.append((f"{label}: CPU, direct, {mb} MB", f"{base:.0f} ms", "1.00x", "", None))
        for name in proxied:
            value = statistics.median(cpu[f"{name} {mb}"]) * 1000
            rows.append((f"{label}: CPU, {name}, {mb} MB", f"{value:.0f} ms", f"{value / base:.2f}x", "(reported)", None))
    return rows


def data_phase(batch: list[tuple[float, float]]) -> float:
    """Seconds from the response's first byte to its last (median of a batch): what the 80 % target is
    judged on."""
    return statistics.median(last - first for first, last in batch)


def whole_download(batch: list[tuple[float, float]]) -> float:
    """Seconds from curl's start to the last byte (median of a batch): set-up included, reported."""
    return statistics.median(last for _, last in batch)


def first_byte(batch: list[tuple[float, float]]) -> float:
    """Seconds from curl's start to the response's first byte (median of a batch), reported."""
    return statistics.median(first for first, _ in batch)


def throughput_rows(samples: dict[str, list[list[tuple[float, float]]]], sizes: list[int], baseline: str,
                    proxied: list[str], label: str) -> list[tuple]:
    """Per size: the data phase's throughput (judged against the target), the whole download's (reported)
    and curl's time to the first byte (reported: the set-up a download pays once)."""
    rows = []
    for mb in sizes:
        for what, seconds, target in (("data phase", data_phase, f">= {TARGET:.0%}"),
                                      ("whole download", whole_download, "(reported)")):
            base = [seconds(t) for t in samples[f"{baseline} {mb}"]]
            rows.append((f"{label}: {baseline}, {mb} MB, {what}", f"{mb / statistics.median(base):.0f} MiB/s", "1.00x",
                         "", None))
            for name in proxied:
                values = [seconds(t) for t in samples[f"{name} {mb}"]]
                per_round = sorted(b / v for b, v in zip(base, values))  # each round's pair ran back to back
                share = statistics.median(per_round)
                rows.append((f"{label}: {name}, {mb} MB, {what}", f"{mb / statistics.median(values):.0f} MiB/s",
                             f"{share:.0%} of direct ({per_round[0]:.0%}-{per_round[-1]:.0%})", target,
                             share >= TARGET if what == "data phase" else None))
        base = statistics.median(first_byte(t) for t in samples[f"{baseline} {mb}"]) * 1e6
        rows.append((f"{label}: {baseline}, {mb} MB, to first byte", f"{base:.0f} us", "1.00x", "", None))
        for name in proxied:
            value = statistics.median(first_byte(t) for t in samples[f"{name} {mb}"]) * 1e6
            rows.append((f"{label}: {name}, {mb} MB, to first byte", f"{value:.0f} us", f"+{value - base:.0f} us",
                         "(reported)", None))
    return rows


def latency_rows(samples: dict[str, list[float]], baseline: str, proxied: list[str], label: str,
                 what: str = "set-up") -> list[tuple]:
    base = statistics.median(samples[baseline])
    rows = [(f"{label}: {what}, {baseline}", f"{base:.0f} us", "1.00x", "", None)]
    for name in proxied:
        value = statistics.median(samples[name])
        rows.append((f"{label}: {what}, {name}", f"{value:.0f} us", f"+{value - base:.0f} us", "(reported)", None))
    return rows


def source_at(rev: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(Path(__file__).resolve().parent.parent), "show", f"{rev}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def module_at(rev: str, path: str, name: str, file: Path | None = None):
    """The module at `path` as it was at git revision `rev`, loaded under a name of its own (with `file` as
    its __file__, for a module that finds files beside itself)."""
    spec = importlib.util.spec_from_loader(name, loader=None)
    module = importlib.util.module_from_spec(spec)
    if file is not None:
        module.__file__ = str(file)
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(source_at(rev, path), f"{path}@{rev}", "exec"), module.__dict__)
    return module


def native_relay_at(rev: str, directory: Path):
    """relay.c's copy loop as it was at `rev`, built into `directory` and loaded by nativerelay.py as it was
    then (its arguments were those of then); None where that revision had none or it cannot be built."""
    try:
        (directory / "relay.c").write_text(source_at(rev, "gtd/sandbox/network/relay.c"))
        then = module_at(rev, "gtd/sandbox/network/nativerelay.py", f"nativerelay_{rev}", directory / "nativerelay.py")
    except subprocess.CalledProcessError:
        return None
    built = then.nativebuild.compile_into(then.SOURCE, "relay.so", directory, then.FLAGS, max_bytes=then.MAX_BYTES,
                                          mode=0o600)
    return then.load(built) if built else None


def proxy_at(rev: str, directory: Path):
    """FilteringProxy of gtd/sandbox/network/proxy.py at `rev`, relaying with gtd/sandbox/network/relay.py and relay.c at `rev`
    (its accept, hand-shake and relay as they were; the policy modules it imports are today's)."""
    relay = module_at(rev, "gtd/sandbox/network/relay.py", f"relay_{rev}")
    if hasattr(relay, "_native_looked"):  # a relay with relay.c's loop: that revision's, not today's library
        relay._native, relay._native_looked = native_relay_at(rev, directory), True
    today = sys.modules.get("gtd.sandbox.network.relay")
    sys.modules["gtd.sandbox.network.relay"] = relay
    try:
        return module_at(rev, "gtd/sandbox/network/proxy.py", f"proxy_{rev}").FilteringProxy
    finally:
        if today is None:
            del sys.modules["gtd.sandbox.network.relay"]
        else:
            sys.modules["gtd.sandbox.network.relay"] = today


def in_process(files: int, probe: int, sizes: list[int], runs: int, batch: int, connects: int,
               relay_from: str | None, server_pid: int, directory: Path) -> list[tuple]:
    from gtd.sandbox.policy.domains import DomainRules
    from gtd.sandbox.network.proxy import FilteringProxy

    rules = DomainRules.parse([f"127.0.0.1:{files}", f"127.0.0.1:{probe}"], [])
    proxy = FilteringProxy(rules, TOKEN)
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    proxy.serve(listener)
    proxy_url = f"http://gtd:{TOKEN}@127.0.0.1:{listener.getsockname()[1]}"
    modes = {"direct": ["--noproxy", "*"], "CONNECT": ["--proxytunnel", "--proxy", proxy_url],
             "plain HTTP proxy": ["--proxy", proxy_url]}
    old_proxy = None
    if relay_from:
        # A second proxy on its own port, built from proxy.py, relay.py and relay.c as they were at that revision.
        old_proxy = proxy_at(relay_from, directory)(rules, TOKEN)
        old_listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        old_proxy.serve(old_listener)
        old_url = f"http://gtd:{TOKEN}@127.0.0.1:{old_listener.getsockname()[1]}"
        modes[f"CONNECT, relay at {relay_from}"] = ["--proxytunnel", "--proxy", old_url]
    probe_cmd = [sys.executable, "-c", PROBE]

    def old_latency(mode: str, count: int) -> dict:
        if not relay_from:
            return {}
        return {f"CONNECT, relay at {relay_from}": lambda: float(local([*probe_cmd, mode, str(probe), str(count), "127.0.0.1",
                                                                        old_url]))}
    cpu: dict[str, list[float]] = {f"{name} {mb}": [] for mb in sizes for name in modes}
    cases = {f"{name} {mb}": with_cpu(lambda flags=flags, mb=mb: curl_timers(local, f"http://127.0.0.1:{files}/{mb}", flags, batch),
                                      server_pid, cpu[f"{name} {mb}"], batch)
             for mb in sizes for name, flags in modes.items()}
    samples = rounds(cases, runs)
    latency = rounds({
        "direct": lambda: float(local([*probe_cmd, "direct", str(probe), str(connects), "127.0.0.1"])),
        "CONNECT": lambda: float(local([*probe_cmd, "connect", str(probe), str(connects), "127.0.0.1", proxy_url])),
        **old_latency("connect", connects),
    }, max(3, runs // 2))
    exchanges = str(max(20, connects // 4))
    exchange = rounds({
        "direct": lambda: float(local([*probe_cmd, "direct-exchange", str(probe), exchanges, "127.0.0.1"])),
        "CONNECT": lambda: float(local([*probe_cmd, "connect-exchange", str(probe), exchanges, "127.0.0.1", proxy_url])),
        **old_latency("connect-exchange", int(exchanges)),
    }, max(3, runs // 2))
    proxy.close()
    if old_proxy is not None:
        old_proxy.close()
    return (throughput_rows(samples, sizes, "direct", [name for name in modes if name != "direct"], "in process")
            + cpu_rows(cpu, sizes, [name for name in modes if name != "direct"], "in process")
            + latency_rows(latency, "direct", [name for name in latency if name != "direct"], "in process")
            + latency_rows(exchange, "direct", [name for name in exchange if name != "direct"], "in process", "exchange"))


def from_sandbox(files: int, probe: int, sizes: list[int], runs: int, batch: int, connects: int) -> list[tuple]:
    """Through a real session: the proxy port (CONNECT) and interception (the client dials the
    registry's stand-in address itself), against the same client outside the sandbox."""
    from gtd.config.schema import GtdConfig, Level
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    home = temp_dir("gtd-bench-proxy-home-")
    workspace = temp_dir("gtd-bench-proxy-ws-")
    config = GtdConfig.model_validate({"sandbox": {"interceptPorts": [files, probe], "levels": {"network": {
        "allowDomains": [f"{REGISTRY}:{files}", f"{REGISTRY}:{probe}", f"127.0.0.1:{files}", f"127.0.0.1:{probe}"]}}}})
    policy = build_policy(config, workspace=workspace, level=Level.NETWORK, home=home)
    session = open_sandbox(policy, resolver=lambda host, port: ["127.0.0.1"] if host == REGISTRY else [])
    try:
        def inside(argv: list[str]) -> str:
            result = session.run(argv, cwd=workspace)
            if result.returncode != 0:
                raise SystemExit(f"inside the sandbox: {argv[0]} failed: {result.stderr.decode(errors='replace')}")
            return result.stdout.decode()

        proxy_url = inside(["/bin/sh", "-c", "printf %s \"$HTTPS_PROXY\""])
        modes = {
            "direct": (local, f"http://127.0.0.1:{files}/{{mb}}", ["--noproxy", "*"]),
            "CONNECT": (inside, f"http://{REGISTRY}:{files}/{{mb}}", ["--proxytunnel"]),
            "intercepted": (inside, f"http://{REGISTRY}:{files}/{{mb}}", ["--noproxy", "*"]),
        }
        cases = {f"{name} {mb}": (lambda run=run, url=url, flags=flags, mb=mb: curl_timers(run, url.format(mb=mb), flags, batch))
                 for mb in sizes for name, (run, url, flags) in modes.items()}
        samples = rounds(cases, runs)
        probe_cmd = [sys.executable, "-c", PROBE]
        latency = rounds({
            "direct": lambda: float(local([*probe_cmd, "direct", str(probe), str(connects), "127.0.0.1"])),
            "CONNECT": lambda: float(inside([*probe_cmd, "connect", str(probe), str(connects), REGISTRY, proxy_url])),
            "intercepted": lambda: float(inside([*probe_cmd, "direct", str(probe), str(connects), REGISTRY])),
        }, max(3, runs // 2))
        exchanges = str(max(20, connects // 4))
        exchange = rounds({
            "direct": lambda: float(local([*probe_cmd, "direct-exchange", str(probe), exchanges, "127.0.0.1"])),
            "CONNECT": lambda: float(inside([*probe_cmd, "connect-exchange", str(probe), exchanges, REGISTRY, proxy_url])),
            "intercepted": lambda: float(inside([*probe_cmd, "direct-exchange", str(probe), exchanges, REGISTRY])),
        }, max(3, runs // 2))
    finally:
        session.close()
        cleanup(home)
        cleanup(workspace)
    return (throughput_rows(samples, sizes, "direct", ["CONNECT", "intercepted"], "sandbox")
            + latency_rows(latency, "direct", ["CONNECT", "intercepted"], "sandbox")
            + latency_rows(exchange, "direct", ["CONNECT", "intercepted"], "sandbox", "exchange"))


def hold_the_interpreter() -> None:
    """Python work that never blocks: every relay thread must then wait for the GIL between two system calls
    (up to sys.getswitchinterval(), 5 ms, each time)."""
    while True:
        sum(range(1000))


def stop(processes: list[subprocess.Popen]) -> None:
    while processes:
        process = processes.pop()
        process.kill()
        process.wait()


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(Path(sys.argv[2]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4,32,128", help="download sizes in MB, comma-separated")
    ap.add_argument("--runs", type=int, default=7, help="rounds (each measures every case once)")
    ap.add_argument("--batch", type=int, default=5, help="downloads per case and round, one command running them all")
    ap.add_argument("--connects", type=int, default=200, help="fresh connections per set-up probe")
    ap.add_argument("--no-sandbox", action="store_true", help="skip the from-inside-bwrap half")
    ap.add_argument("--relay-from", metavar="REV", help="also CONNECT through proxy.py and relay.py as of this git revision")
    ap.add_argument("--load", type=int, default=0, metavar="N", help="run N busy loops during the measurement")
    ap.add_argument("--busy-interpreter", action="store_true",
                    help="run a CPU-bound Python thread in the proxy's own process (as gtd's own work can be)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    tmp = temp_dir("gtd-bench-proxy-")
    server = old_native = None
    burners: list[subprocess.Popen] = []
    try:
        chunk = os.urandom(1024 * 1024)
        for mb in sizes:
            with open(tmp / str(mb), "wb") as f:
                for _ in range(mb):
                    f.write(chunk)
        server, files, probe = start_servers(tmp)
        burners += [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
        from gtd.sandbox.network import relay

        relay.use_native()  # relay.c's loop, built into gtd's state dir if needed (else the Python loop)
        if args.busy_interpreter:
            threading.Thread(target=hold_the_interpreter, daemon=True).start()
        started = time.perf_counter()
        load_before = os.getloadavg()[0]
        old_native = temp_dir("gtd-bench-proxy-relay-")
        rows = in_process(files, probe, sizes, args.runs, args.batch, args.connects, args.relay_from, server.pid,
                          old_native)
        if not args.no_sandbox and shutil.which("bwrap"):
            rows += from_sandbox(files, probe, sizes, args.runs, args.batch, args.connects)
        load_after = os.getloadavg()[0]
        stop(burners)
        print(f"Load average (1 min) {load_before:.1f} at the start, {load_after:.1f} at the end; {args.load} busy loops "
              f"of this benchmark's own on {os.cpu_count()} cores"
              + ("; a CPU-bound Python thread in the proxy's process" if args.busy_interpreter else "")
              + f"; today's relay loop: {relay.in_use()}")
        print(f"Proxy: downloads of {', '.join(map(str, sizes))} MB, median of {args.runs} rounds (each case once per "
              f"round, in turn, as the median of {args.batch} downloads); set-up: median of {args.connects} fresh "
              f"connections per sample "
              f"({time.perf_counter() - started:.0f} s)")
        print(table(rows))
    finally:
        stop(burners)
        if server is not None:
            server.stdin.close()
            server.kill()
            server.wait()
        cleanup(tmp)
        if old_native is not None:
            cleanup(old_native)


if __name__ == "__main__":
    main()
