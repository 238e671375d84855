"""Sandbox start with the Landlock backend (docs/landlock-backend.md), as same-run ratios against bare bwrap
and against the bwrap backend.

1. In-process, per command: `SandboxSession.run(["true"])` in an open session, Landlock backend vs. bwrap
   backend vs. bare `bwrap <namespaces> true`.
2. In-process, a whole session: open_sandbox + run(["true"]) + close, for each backend (the proxy, the
   seccomp program from its cache, the placeholder registry; the Landlock backend's private TMPDIR).
3. CLI: `gtd sandbox run --level readwrite -- true` with `sandbox.backend` set to landlock, then bwrap, in
   a user config of a hermetic HOME, vs. bare bwrap; each row also shows the CPU time used.

All interleaved round-robin. The Landlock backend is measured where bubblewrap works (here), so both run
on the same machine in the same rounds; where namespaces are refused it is the only one that starts.

Run: .venv/bin/python benchmarks/bench_landlock_backend.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from benchlib import cleanup, git_repo, gtd_command, hermetic_env, interleaved, runner, table, temp_dir  # noqa: E402

BARE = ["bwrap", "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-net",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x (+{value - base:.1f} ms)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()

    tmp = temp_dir("gtd-bench-landlock-")
    env = hermetic_env(tmp)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("HOME", "XDG_"))})
    repo = git_repo(tmp / "repo", env)

    from gtd.config.schema import GtdConfig, Level
    from gtd.sandbox.linux.landlock import abi_version
    from gtd.sandbox.policy.sandbox_policy import build_policy
    from gtd.sandbox.session import open_sandbox

    if abi_version() < 4:
        raise SystemExit("the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")

    def policy(backend: str):
        config = GtdConfig.model_validate({"sandbox": {"backend": backend}})
        return build_policy(config, workspace=repo, level=Level.READWRITE, home=Path(env["HOME"]))

    policies = {name: policy(name) for name in ("landlock", "bwrap")}
    sessions = {name: open_sandbox(p) for name, p in policies.items()}
    assert sessions["landlock"].backend.name == "landlock" and sessions["bwrap"].backend.name == "bwrap"

    def command(name: str):
        return lambda: sessions[name].run(["true"], cwd=repo)

    def whole(name: str):
        def run():
            with open_sandbox(policies[name]) as session:
                session.run(["true"], cwd=repo)
        return run

    def bare():
        subprocess.run([*BARE, "true"], check=True)

    per_command = interleaved({"bare": bare, "landlock": command("landlock"), "bwrap": command("bwrap")}, args.runs)
    for session in sessions.values():
        session.close()
    per_session = interleaved({"bare": bare, "landlock": whole("landlock"), "bwrap": whole("bwrap")}, args.runs)

    gtd = [*gtd_command(), "sandbox", "run", "--level", "readwrite", "--", "true"]
    cli = {"bare": runner([*BARE, "true"], cwd=repo, env=env)}
    for name in ("landlock", "bwrap"):
        cli_env = hermetic_env(tmp / f"cli-{name}")
        Path(cli_env["XDG_CONFIG_HOME"], "gtd").mkdir(parents=True, exist_ok=True)
        Path(cli_env["XDG_CONFIG_HOME"], "gtd", "config.json").write_text(f'{{"sandbox": {{"backend": "{name}"}}}}')
        cli[name] = runner(gtd, cwd=repo, env=cli_env)
    cpu: dict[str, float] = {}
    end_to_end = interleaved(cli, args.runs, cpu=cpu)

    rows = []
    for title, found in (("SandboxSession.run(true)", per_command), ("open + run(true) + close", per_session),
                         ("gtd sandbox run -- true", end_to_end)):
        base = found["bare"]
        rows.append((f"{title}: bare bwrap true", f"{base:.1f} ms", "baseline", "", None))
        for name in ("landlock", "bwrap"):
            rows.append((f"{title}: {name} backend", f"{found[name]:.1f} ms", ratio(found[name], base), "", None))
        rows.append((f"{title}: landlock / bwrap backend", "", f"{found['landlock'] / found['bwrap']:.2f}x", "", None))
    for name in ("bare", "landlock", "bwrap"):
        rows.append((f"gtd sandbox run CPU: {name}", f"{cpu.get(name, 0):.1f} ms", "", "", None))
    print(f"Median of {args.runs} interleaved runs, level readwrite, as uid {os.geteuid()}")
    print(table(rows))
    cleanup(tmp)


if __name__ == "__main__":
    main()
