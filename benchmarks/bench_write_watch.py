"""The write watch's cost (gtd/sandbox/linux/write_watch.py): a command that only creates and removes files,
with the watch and without it, in the same rounds.

Every watched call (an open for writing, a create, an unlink, ...) stops the process until gtd has read
its path and checked whether the sandbox's view of it is read-only: this measures that round trip where it
weighs most, a loop of nothing but watched calls. "without" is the same session with the backend's watch
switched off (`_write_watch` returning None, as on a kernel without seccomp user notification).

Run: .venv/bin/python benchmarks/bench_write_watch.py [--runs 5] [--files 3000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import cleanup, temp_dir  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=3000)
    args = parser.parse_args()

    import gtd.sandbox.linux.bwrap_backend as backend
    from gtd.config.schema import GtdConfig, Level
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    tmp = temp_dir("gtd-bench-watch-")
    try:
        repo = tmp / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        policy = build_policy(GtdConfig(), workspace=repo, level=Level.READWRITE)
        script = (f"import os\nfor i in range({args.files}):\n    open(f'f{{i}}', 'w').close()\n"
                  f"for i in range({args.files}):\n    os.unlink(f'f{{i}}')\n")
        watching = backend.BwrapBackend._write_watch
        times: dict[bool, list[float]] = {False: [], True: []}
        load = os.getloadavg()[0]
        for _ in range(args.runs):
            for on in (False, True):
                backend.BwrapBackend._write_watch = watching if on else (lambda self, policy: None)
                session = open_sandbox(policy)
                try:
                    start = time.perf_counter()
                    session.run([sys.executable, "-c", script], cwd=repo, timeout=300)
                    times[on].append(time.perf_counter() - start)
                finally:
                    session.close()
        backend.BwrapBackend._write_watch = watching
        without, with_ = statistics.median(times[False]), statistics.median(times[True])
        calls = 2 * args.files
        print(f"{args.runs} rounds, {calls} watched calls a run, load {load:.1f} -> {os.getloadavg()[0]:.1f}")
        print(f"without the watch {without * 1000:.0f} ms, with it {with_ * 1000:.0f} ms: {with_ / without:.2f}x, "
              f"+{(with_ - without) / calls * 1e6:.0f} us a watched call")
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
