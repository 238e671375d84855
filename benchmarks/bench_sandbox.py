"""Sandbox overhead, measured against baselines taken in the same run (ratios, not absolute targets).

1. in-process: SandboxSession.run(["true"]) (bwrap + seccomp + in-namespace proxy listener)
   vs. subprocess `bwrap <same namespaces> true`; target: gtd adds < 60 ms.
2. CLI: `gtd sandbox run -- true` vs. bare bwrap, with Python/CLI import time shown separately.
3. proxy throughput: a download through the proxy from inside the sandbox vs. a direct loopback
   transfer with the same client outside it.

Run: .venv/bin/python benchmarks/bench_sandbox.py [--runs N]
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BARE = ["bwrap", "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
SIZE = 64 * 1024 * 1024


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


class Blob(http.server.BaseHTTPRequestHandler):
    data = os.urandom(1024 * 1024) * (SIZE // (1024 * 1024))

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.data)))
        self.end_headers()
        self.wfile.write(self.data)

    def log_message(self, *a):
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gtd-bench-"))
    home, repo = tmp / "home", tmp / "repo"
    home.mkdir()
    repo.mkdir()
    os.environ["HOME"] = str(home)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    from gtd.config.schema import GtdConfig, Level
    from gtd.providers.base import SandboxNeeds
    from gtd.sandbox.policy import build_policy
    from gtd.sandbox.session import open_sandbox

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Blob)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    t = time.perf_counter()
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, home=home,
                          needs=SandboxNeeds(model_hosts=[f"127.0.0.1:{port}"]))
    session = open_sandbox(policy)
    setup = (time.perf_counter() - t) * 1000

    def bare():
        subprocess.run([*BARE, "true"], check=True)

    def gtd_run():
        session.run(["true"], cwd=repo)

    bare(), gtd_run()  # warm caches
    b = timed(bare, args.runs)
    g = timed(gtd_run, args.runs)
    print(f"session setup (policy + seccomp + proxy, once per agent run): {setup:.1f} ms")
    print(f"bare bwrap true:            {b:6.1f} ms (median of {args.runs})")
    print(f"SandboxSession.run(true):   {g:6.1f} ms  ratio {g / b:.2f}x  added {g - b:+.1f} ms (target < 60 ms)")

    py = [sys.executable, "-c", "pass"]
    imp = [sys.executable, "-c", "import gtd.cli.app"]
    cli = [sys.executable, "-m", "gtd", "sandbox", "run", "--", "true"]
    p = timed(lambda: subprocess.run(py, check=True), max(5, args.runs // 2))
    i = timed(lambda: subprocess.run(imp, check=True, cwd=ROOT), max(5, args.runs // 2))
    c = timed(lambda: subprocess.run(cli, check=True, cwd=repo), max(5, args.runs // 2))
    print(f"python -c pass:             {p:6.1f} ms")
    print(f"import gtd.cli.app: {i:6.1f} ms  (interpreter + CLI imports)")
    print(f"gtd sandbox run -- true:    {c:6.1f} ms  ratio {c / b:.2f}x vs bare bwrap; minus imports: {c - i:.1f} ms")

    url = f"http://127.0.0.1:{port}/blob"
    curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}", url]
    direct = statistics.median(float(subprocess.run(curl, capture_output=True, text=True, check=True).stdout) for _ in range(3))
    proxied = statistics.median(float(session.run(curl, cwd=repo).stdout) for _ in range(3))
    mb = SIZE / 1e6
    print(f"direct loopback transfer:   {mb / direct:8.0f} MB/s")
    print(f"through the sandbox proxy:  {mb / proxied:8.0f} MB/s  ({direct / proxied:.0%} of direct)")
    session.close()
    server.shutdown()


if __name__ == "__main__":
    main()
