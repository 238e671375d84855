"""What the kernel layers under bubblewrap cost per sandboxed command (ratios, same run).

1. `SandboxSession.run(["true"])` with Landlock + resource limits (the native launcher, launch.c, in front
   of the command, a cgroup per command where one is writable), the same with the Python launcher
   (`python -I -S launch.py`, the fallback without a C compiler), and the session with the layers off.
2. The launchers alone: native and `python -I -S launch.py ... -- true` vs. `python -I -S -c pass` vs. `true`.

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

from benchlib import interleaved, table  # noqa: E402


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
    from gtd.sandbox.linux.kernel import LAUNCHER, KernelLayers, status
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    print(f"landlock: {status()['landlock']}; cgroups: {status()['cgroups'] or 'none writable'}")
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE, home=home)
    session = open_sandbox(policy)
    layers = session.backend.layers
    native = layers.native
    if native is None:
        print("no native launcher (no C compiler?): the native rows repeat the Python launcher")
    prefix, cgroup = KernelLayers.prefix, KernelLayers.cgroup

    def with_launcher(which):
        def run():
            layers.native = native if which == "native" else None
            session.run(["true"], cwd=repo)
        return run

    def without_layers():
        KernelLayers.prefix = lambda self, *args: []
        KernelLayers.cgroup = lambda self: None
        try:
            session.run(["true"], cwd=repo)
        finally:
            KernelLayers.prefix, KernelLayers.cgroup = prefix, cgroup

    times = interleaved({"without": without_layers, "native": with_launcher("native"),
                         "python": with_launcher("python")}, args.runs)
    session.close()

    py = os.path.realpath(sys.executable)
    launch_args = ["--nproc", "8192", "--data", str(1 << 34), "--landlock", "3", "--write", str(repo), "--write", "/tmp",
                   "--", "true"]
    binary = tmp / "launch"
    binary.write_bytes(native or b"")
    binary.chmod(0o755)
    alone = {"true": lambda: subprocess.run(["true"]),
             "python -I -S -c pass": lambda: subprocess.run([py, "-I", "-S", "-c", "pass"]),
             "launch.py + true": lambda: subprocess.run([py, "-I", "-S", str(LAUNCHER), *launch_args])}
    if native:
        alone["native launcher + true"] = lambda: subprocess.run([str(binary), *launch_args])
    lone = interleaved(alone, args.runs)

    base = times["without"]
    rows = [
        ("SandboxSession.run(true) without the layers", f"{base:.1f} ms", "baseline", "", None),
        ("... with them, native launcher", f"{times['native']:.1f} ms",
         f"+{times['native'] - base:.1f} ms ({times['native'] / base:.2f}x)", "", None),
        ("... with them, Python launcher", f"{times['python']:.1f} ms",
         f"+{times['python'] - base:.1f} ms ({times['python'] / base:.2f}x)", "", None),
    ] + [(name, f"{value:.1f} ms", f"+{value - lone['true']:.1f} ms", "", None) for name, value in lone.items()]
    print(f"Median of {args.runs} interleaved runs (one cgroup per command where one is writable)")
    print(table(rows))


if __name__ == "__main__":
    main()
