"""Sandbox overhead, measured against baselines taken in the same run (ratios, not absolute targets).

1. in-process: SandboxSession.run(["true"]) (bwrap + seccomp + in-namespace proxy listener)
   vs. subprocess `bwrap <same namespaces> true`; target: gtd adds < 60 ms.
2. CLI: `gtd sandbox run -- true` vs. bare bwrap (target: + 60 ms end to end), with the interpreter
   start, the readwrite level and the same command through typer shown beside it (byte-code caching on,
   a fresh HOME).
   The same two commands in a large workspace (a git repository with an ignored 48,000-file
   node_modules in 8,000 directories, --big-files to change it) show what walking the work tree costs.
3. proxy throughput: a download through the proxy from inside the sandbox vs. a direct loopback
   transfer with the same client outside it, a spot check reported only (bench_proxy.py measures the proxy
   and judges the >= 80 % target).

Run: .venv/bin/python benchmarks/bench_sandbox.py [--runs N] [--before CHECKOUT]
"""

from __future__ import annotations

import argparse
import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

BARE = ["bwrap", "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
SIZE = 64 * 1024 * 1024


class Blob(http.server.BaseHTTPRequestHandler):
    data = os.urandom(1024 * 1024) * (SIZE // (1024 * 1024))

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.data)))
        self.end_headers()
        self.wfile.write(self.data)

    def log_message(self, *a):
        pass


def large_workspace(repo: Path, files: int) -> Path:
    """`repo` with an ignored node_modules shaped like a real one: packages of 10 directories, 6 files each."""
    (repo / ".gitignore").write_text("node_modules/\n")
    per_package = 60
    for p in range(max(1, files // per_package)):
        for sub in ("", "lib", "lib/util", "dist", "test", "src", "types", "esm", "cjs", "docs"):
            d = repo / "node_modules" / f"pkg{p}" / sub
            d.mkdir(parents=True, exist_ok=True)
            for f in range(6):
                (d / f"f{f}.js").touch()
    return repo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--before", type=Path, help="a checkout of the code to compare with (loaded through PYTHONPATH)")
    ap.add_argument("--big-files", type=int, default=48_000, help="files in the large workspace's node_modules")
    args = ap.parse_args()

    from benchlib import git_repo, gtd_command, hermetic_env, interleaved, runner, table, timed

    tmp = Path(tempfile.mkdtemp(prefix="gtd-bench-"))
    env = hermetic_env(tmp)
    os.environ.update({k: env[k] for k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME")})
    home = Path(env["HOME"])
    repo = git_repo(tmp / "repo", env)
    big = large_workspace(git_repo(tmp / "big", env), args.big_files)

    from gtd.config.schema import GtdConfig, Level
    from gtd.providers.base import SandboxNeeds
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Blob)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    t = time.perf_counter()
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, home=home,
                          needs=SandboxNeeds(model_hosts=[f"127.0.0.1:{port}"]))
    session = open_sandbox(policy)
    session.start()
    setup = (time.perf_counter() - t) * 1000

    def bare():
        subprocess.run([*BARE, "true"], check=True)

    def gtd_run():
        session.run(["true"], cwd=repo)

    runs = args.runs
    inproc = interleaved({"bare": bare, "session": gtd_run}, args.runs)
    gtd = gtd_command()
    cpu: dict[str, float] = {}
    cli = interleaved({
        "bare": runner([*BARE, "true"], cwd=repo, env=env),
        "python": runner([sys.executable, "-c", "pass"], cwd=repo, env=env),
        "cli": runner([*gtd, "sandbox", "run", "--", "true"], cwd=repo, env=env),
        "cli readwrite": runner([*gtd, "sandbox", "run", "--level", "readwrite", "--", "true"], cwd=repo, env=env),
        # the same command through the typer command tree (what every invocation paid before the fast entry)
        "typer": runner([sys.executable, "-m", "gtd.cli.sandbox_cmd", "sandbox", "run", "--", "true"], cwd=repo, env=env),
        "big": runner([*gtd, "sandbox", "run", "--", "true"], cwd=big, env=env),
        "big readwrite": runner([*gtd, "sandbox", "run", "--level", "readwrite", "--", "true"], cwd=big, env=env),
    } | ({} if args.before is None else {
        f"{name} (before)": runner([*gtd, "sandbox", "run", *level, "--", "true"], cwd=where, env=env,
                                   extra_env={"PYTHONPATH": str(args.before.resolve())})
        for name, level, where in (("cli", [], repo), ("cli readwrite", ["--level", "readwrite"], repo),
                                   ("big", [], big), ("big readwrite", ["--level", "readwrite"], big))
    }), runs, cpu=cpu)

    url = f"http://127.0.0.1:{port}/blob"
    curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}", url]
    direct = statistics.median(float(subprocess.run(curl, capture_output=True, text=True, check=True).stdout) for _ in range(3))
    proxied = statistics.median(float(session.run(curl, cwd=repo).stdout) for _ in range(3))
    session.close()
    server.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)  # the large workspace is 48,000 files

    b = inproc["bare"]
    added, cli_added = inproc["session"] - b, cli["cli"] - cli["bare"]
    mb = SIZE / 1e6

    def vs_bare(name: str) -> str:
        return f"+{cli[name] - cli['bare']:.1f} ms ({cli[name] / cli['bare']:.1f}x)"

    def cpu_of(name: str) -> str:
        return f"{cli[name]:.1f} ms (cpu {cpu.get(name, 0):.1f})"

    rows = [
        ("bare bwrap true (baseline)", f"{b:.1f} ms", "1.00x", "", None),
        ("session setup, once per agent run", f"{setup:.1f} ms", "", "(reported)", None),
        ("SandboxSession.run(true)", f"{inproc['session']:.1f} ms", f"+{added:.1f} ms", "<= +60 ms", added <= 60),
        ("bare bwrap true (CLI baseline)", cpu_of("bare"), "1.00x", "", None),
        ("python -c pass", cpu_of("python"), vs_bare("python"), "(reported)", None),
        ("gtd sandbox run -- true", cpu_of("cli"), vs_bare("cli"), "<= +60 ms", cli_added <= 60),
        ("gtd sandbox run --level readwrite -- true", cpu_of("cli readwrite"), vs_bare("cli readwrite"), "(reported)", None),
        ("same through typer (no fast entry)", cpu_of("typer"), vs_bare("typer"), "(reported)", None),
        (f"gtd sandbox run -- true, large workspace ({args.big_files} files)", cpu_of("big"), vs_bare("big"), "(reported)", None),
        ("same, --level readwrite", cpu_of("big readwrite"), vs_bare("big readwrite"), "(reported)", None),
        *[(f"{what} (--before)", cpu_of(f"{name} (before)"), vs_bare(f"{name} (before)"), "(reported)", None)
          for name, what in (("cli", "gtd sandbox run -- true"), ("cli readwrite", "same, --level readwrite"),
                             ("big", "large workspace"), ("big readwrite", "large workspace, --level readwrite"))
          if args.before is not None],
        # a spot check (3 downloads, each a sandboxed command of its own, set-up included): bench_proxy.py
        # measures the proxy in interleaved rounds and judges issue 13's 80 % target there
        ("download via the sandbox's proxy (whole download)", f"{mb / proxied:.0f} MB/s",
         f"{direct / proxied:.0%} of direct", "(bench_proxy.py)", None),
    ]
    print(f"Sandbox start-up (median of {args.runs} interleaved runs; CLI rows end to end, interpreter included, with the "
          f"CPU time gtd and its children used) and proxy throughput from inside bwrap")
    print(table(rows))


if __name__ == "__main__":
    main()
