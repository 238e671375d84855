"""What the kernel layers under bubblewrap cost per sandboxed command (ratios, same run).

1. `SandboxSession.run(["true"])` with Landlock + resource limits (the launcher `python -I -S
   launch.py` in front of the command, a cgroup per command where one is writable)
   vs. the same session with the layers switched off.
2. The launcher alone: `python -I -S launch.py ... -- true` vs. `python -I -S -c pass` vs. `true`.

Run: .venv/bin/python benchmarks/bench_kernel_layers.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from benchlib import timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="gtd-bench-"))
    home, repo = tmp / "home", tmp / "repo"
    home.mkdir()
    repo.mkdir()
    os.environ["HOME"] = str(home)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    from gtd.config.schema import GtdConfig, Level
    from gtd.sandbox.kernel import LAUNCHER, KernelLayers, status
    from gtd.sandbox.policy import build_policy
    from gtd.sandbox.session import open_sandbox

    print(f"landlock: {status()['landlock']}; cgroups: {status()['cgroups'] or 'none writable'}")
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, home=home)
    session = open_sandbox(policy)
    run = lambda: session.run(["true"], cwd=repo)  # noqa: E731
    run()
    with_layers = timed(run, args.runs)
    prefix, cgroup = KernelLayers.prefix, KernelLayers.cgroup
    KernelLayers.prefix = lambda self, *args: []
    KernelLayers.cgroup = lambda self: None
    without = timed(run, args.runs)
    KernelLayers.prefix, KernelLayers.cgroup = prefix, cgroup
    session.close()
    print(f"SandboxSession.run(true) without the layers: {without:6.1f} ms")
    print(f"SandboxSession.run(true) with the layers:    {with_layers:6.1f} ms  ratio {with_layers / without:.2f}x"
          f"  added {with_layers - without:+.1f} ms")

    py = os.path.realpath(sys.executable)
    launcher = [py, "-I", "-S", str(LAUNCHER), "--nproc", "8192", "--data", str(1 << 34), "--landlock", "3",
                "--write", str(repo), "--write", "/tmp", "--", "true"]
    t = timed(lambda: subprocess.run(["true"]), args.runs)
    p = timed(lambda: subprocess.run([py, "-I", "-S", "-c", "pass"]), args.runs)
    lch = timed(lambda: subprocess.run(launcher), args.runs)
    print(f"true: {t:.1f} ms   python -I -S -c pass: {p:.1f} ms   launcher + true: {lch:.1f} ms"
          f"  (launcher beyond bare python: {lch - p:+.1f} ms)")


if __name__ == "__main__":
    main()
