"""A real project's test suite inside the sandbox vs outside it (issue target: within 5 %).

The project is gtd itself: `pytest tests/workflow/test_todo.py` (about a hundred real tests, pure
Python, file I/O and imports: what a build phase's test command does). Measured in one run, interleaved:

1. outside: the suite as a plain subprocess;
2. inside, per command: the same suite through one open SandboxSession at readwrite (what every test
   run of a build phase pays: bwrap, seccomp, kernel layers, the package-cache overlay's nsenter);
3. inside, end to end: `gtd sandbox run --level readwrite -- <suite>` (adds gtd's own start-up and the
   session set-up, a constant per command);
4. the constants: `true` through the open session vs outside, and `gtd sandbox run -- true` end to end
   vs bare bwrap.

It also reports what the package-cache overlay adds to a session's start (the holder namespace with
its overlay mounts) against a session without caches.

Run: .venv/bin/python benchmarks/bench_workload.py [--runs N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from benchlib import cleanup, gtd_command, hermetic_env, interleaved, runner, table, temp_dir  # noqa: E402

BARE = ["bwrap", "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
SUITE = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/workflow/test_todo.py"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()

    import os

    tmp = temp_dir("gtd-bench-workload-")
    env = hermetic_env(tmp)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the suite must not write byte code into the checkout
    env.pop("PYTHONPYCACHEPREFIX", None)
    home = Path(env["HOME"])
    for cache in (home / ".cache" / "pip", home / ".npm"):
        cache.mkdir(parents=True, exist_ok=True)  # so the overlay holder is part of what is measured
    old = dict(os.environ)
    os.environ.update(env)
    try:
        from gtd.config.schema import GtdConfig, Level
        from gtd.record import replace
        from gtd.sandbox.policy.sandbox_policy import build_policy
        from gtd.sandbox.session import open_sandbox

        policy = build_policy(GtdConfig(), workspace=ROOT, level=Level.READWRITE, home=home)
        session = open_sandbox(policy)

        def inside() -> None:
            result = session.run(SUITE, cwd=ROOT, env={"PYTHONDONTWRITEBYTECODE": "1"}, timeout=600)
            if result.returncode != 0:
                raise SystemExit(f"suite failed inside the sandbox:\n{result.stdout.decode()[-2000:]}{result.stderr.decode()[-2000:]}")

        def inside_true() -> None:
            session.run(["true"], cwd=ROOT)

        cases = {
            "true outside": runner(["true"], cwd=ROOT, env=env),
            "bare bwrap true": runner([*BARE, "true"], cwd=ROOT, env=env),
            "gtd sandbox run true": runner([*gtd_command(), "sandbox", "run", "--level", "readwrite", "--", "true"],
                                           cwd=ROOT, env=env),
            "true inside (session)": inside_true,
            "outside": runner(SUITE, cwd=ROOT, env=env),
            "inside (session)": inside,
            "inside (gtd sandbox run)": runner([*gtd_command(), "sandbox", "run", "--level", "readwrite", "--", *SUITE],
                                               cwd=ROOT, env=env),
        }
        times = interleaved(cases, args.runs, warmup=1)
        session.close()

        def start(with_caches: bool):
            p = policy if with_caches else replace(policy, caches=())

            def run() -> None:
                t = time.perf_counter()
                s = open_sandbox(p)
                s.close()
                return time.perf_counter() - t
            return run

        starts = interleaved({"session start with caches": start(True), "session start without caches": start(False)},
                             max(args.runs * 3, 15))
    finally:
        os.environ.clear()
        os.environ.update(old)
        cleanup(tmp)

    base = times["outside"]
    rows = [
        ("test suite outside", f"{base:.0f} ms", "baseline", "", None),
        ("test suite inside (session)", f"{times['inside (session)']:.0f} ms",
         f"{times['inside (session)'] / base:.3f}x", "<= 1.05x", times["inside (session)"] <= base * 1.05),
        ("test suite inside (gtd sandbox run)", f"{times['inside (gtd sandbox run)']:.0f} ms",
         f"{times['inside (gtd sandbox run)'] / base:.3f}x", "(adds gtd start-up)", None),
        ("per command: `true` inside (session)", f"{times['true inside (session)']:.0f} ms",
         f"+{times['true inside (session)'] - times['true outside']:.0f} ms", "(constant per command)", None),
        ("bare bwrap true", f"{times['bare bwrap true']:.0f} ms", "baseline", "", None),
        ("gtd sandbox run --level readwrite -- true", f"{times['gtd sandbox run true']:.0f} ms",
         f"+{times['gtd sandbox run true'] - times['bare bwrap true']:.0f} ms",
         "<= +60 ms", times["gtd sandbox run true"] - times["bare bwrap true"] <= 60),
        ("session start without caches", f"{starts['session start without caches']:.1f} ms", "baseline", "", None),
        ("session start with the cache overlay", f"{starts['session start with caches']:.1f} ms",
         f"+{starts['session start with caches'] - starts['session start without caches']:.1f} ms", "", None),
    ]
    print(table(rows))


if __name__ == "__main__":
    main()
