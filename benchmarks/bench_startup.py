"""CLI start-up: the commands a person runs most (and every Tab press) against `python -c pass`.

Target (issue 13): `gtd --help`, `gtd config show`, `gtd status` (when the command exists) and shell
completion each take at most 4x the bare interpreter start, measured interleaved in the same run.

Run: .venv/bin/python benchmarks/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import cleanup, git_repo, gtd_command, hermetic_env, interleaved, runner, table, temp_dir  # noqa: E402

TARGET = 4.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()

    tmp = temp_dir("gtd-bench-startup-")
    try:
        env = hermetic_env(tmp)
        repo = git_repo(tmp / "repo", env)
        (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "true", "testRetries": 2}) + "\n")
        gtd = gtd_command()
        has_status = subprocess.run([*gtd, "status", "--help"], cwd=repo, env=env, capture_output=True).returncode == 0

        cases = {
            "python -c pass (baseline)": runner([sys.executable, "-c", "pass"], cwd=repo, env=env),
            "gtd --help": runner([*gtd, "--help"], cwd=repo, env=env),
            "gtd config show": runner([*gtd, "config", "show"], cwd=repo, env=env),
            "gtd config show --json": runner([*gtd, "config", "show", "--json"], cwd=repo, env=env),
            "completion: gtd sa<Tab> (bash)": runner(gtd, cwd=repo, env=env, extra_env={
                "_GTD_COMPLETE": "complete_bash", "COMP_WORDS": "gtd sa", "COMP_CWORD": "1"}),
            "completion: gtd sandbox run --<Tab> (zsh)": runner(gtd, cwd=repo, env=env, extra_env={
                "_GTD_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "gtd sandbox run --"}),
        }
        if has_status:
            cases["gtd status"] = runner([*gtd, "status"], cwd=repo, env=env)
        cpu: dict[str, float] = {}
        medians = interleaved(cases, args.runs, cpu=cpu)
        base, base_cpu = medians.pop("python -c pass (baseline)"), cpu["python -c pass (baseline)"]
        rows = [("python -c pass (baseline)", f"{base:.1f} ms (cpu {base_cpu:.0f})", "1.00x (cpu 1.00x)", "", None)]
        for name, ms in medians.items():
            ratio = ms / base
            rows.append((name, f"{ms:.1f} ms (cpu {cpu[name]:.0f})", f"{ratio:.2f}x (cpu {cpu[name] / base_cpu:.2f}x)",
                         f"<= {TARGET:.0f}x", ratio <= TARGET))
        if not has_status:
            rows.append(("gtd status", "n/a", "", "(no `gtd status` command yet)", None))
        print(f"CLI start-up, median of {args.runs} interleaved runs ({' '.join(gtd)}); 'met' is judged on wall time,")
        print("the CPU time (user + system, less disturbed by a busy machine) is shown beside it")
        print(table(rows))
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
