"""pip's time to give up on a refused index: gtd's answer to a repeated refusal, before and after, same run.

Real pip in a real sandbox (bwrap, empty network namespace, gtd's proxy), headless: a host no rule allows is
refused ("not approved"), as `gtd sandbox run` without a terminal refuses it. Each round runs, in turn:

- `local only`: `pip download` of one wheel from a loopback index the config allows (the baseline);
- `refused, before`: the same with `--extra-index-url https://pypi.denied.test/simple/`, every refusal
  answered as before this change (a CONNECT `403 Forbidden`: pip retries it 5 times with 0.5-4 s sleeps);
- `refused, after`: the same, with today's answer to a host refused before in the run (an HTTP 403
  inside TLS, gtd.sandbox.network.refusal_tls): pip's first retry gets it and pip moves on.

"before" is today's proxy with its TLS answer switched off for that session (the proxy's `tls_refusals`
set to None, as it is on a host without `openssl`): the same code path the old proxy took. Each session
is new, so every case starts with the host not yet refused. The table shows medians; "to give up" is a
case's median minus the baseline's median of the same run; the ratio is after/before of that.

Run: .venv/bin/python benchmarks/bench_denied_host.py [--runs 5]
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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "workloads"))
from benchlib import cleanup, git_repo, hermetic_env, temp_dir  # noqa: E402

DENIED = "pypi.denied.test"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from registries import LocalRegistry  # tests/workloads: a loopback simple index

    from gtd.config.schema import GtdConfig, Level
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    tmp = temp_dir("gtd-bench-denied-")
    try:
        env = hermetic_env(tmp)
        os.environ.update(env)
        for key in [k for k in os.environ if k.startswith("PIP_")]:
            del os.environ[key]  # the machine's pip settings (find-links, mirrors) stay out
        os.environ.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
        repo = git_repo(tmp / "repo", env)
        index = LocalRegistry(tmp / "index")
        index.add_wheel("gtdwheel", "1.0", "VALUE = 1\n")
        config = GtdConfig.model_validate({"sandbox": {"levels": {"network": {
            "allowDomains": [f"127.0.0.1:{index.port}"], "hostLoopbackPorts": [index.port]}}}})
        policy = build_policy(config, workspace=repo, level=Level.NETWORK, home=Path(env["HOME"]))
        base = (f"rm -rf dl; {sys.executable} -m pip download -q --no-deps --no-cache-dir -d dl"
                f" --index-url http://127.0.0.1:{index.port}/simple/")
        cases = {
            "local only": (base + " gtdwheel", True),
            "refused, before": (base + f" --extra-index-url https://{DENIED}/simple/ gtdwheel", False),
            "refused, after": (base + f" --extra-index-url https://{DENIED}/simple/ gtdwheel", True),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        refusals: dict[str, list[int]] = {name: [] for name in cases}
        load = os.getloadavg()[0]
        try:
            for _ in range(args.runs):
                for name, (script, tls) in cases.items():
                    session = open_sandbox(policy, network_decider=lambda request: False)
                    try:
                        if not tls:
                            session._proxy.tls_refusals = None  # the answer before this change
                        start = time.perf_counter()
                        r = session.run(["/bin/sh", "-c", script], cwd=repo, timeout=120)
                        times[name].append(time.perf_counter() - start)
                        if r.returncode != 0 or not (repo / "dl" / "gtdwheel-1.0-py3-none-any.whl").exists():
                            raise SystemExit(f"{name}: pip failed: {r.stderr.decode(errors='replace')[-2000:]}")
                        refusals[name].append(sum(v.kind == "network" for v in session.violations))
                    finally:
                        session.close()
        finally:
            index.close()
        print(f"{args.runs} rounds, pip {_pip_version()}, load {load:.1f} -> {os.getloadavg()[0]:.1f}")
        local = statistics.median(times["local only"])
        print(f"| case | median | to give up on {DENIED} | refusals reported |")
        print("|---|---|---|---|")
        give_up = {}
        for name in cases:
            median = statistics.median(times[name])
            give_up[name] = median - local
            cell = "–" if name == "local only" else f"{give_up[name]:.2f} s"
            print(f"| {name} | {median:.2f} s | {cell} | {sorted(set(refusals[name]))} |")
        print(f"after/before, time to give up: {give_up['refused, after'] / give_up['refused, before']:.3f}; "
              f"whole command: {statistics.median(times['refused, after']) / statistics.median(times['refused, before']):.3f}")
    finally:
        cleanup(tmp)


def _pip_version() -> str:
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split()[1]


if __name__ == "__main__":
    main()
