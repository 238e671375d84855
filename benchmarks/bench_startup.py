"""CLI start-up: the commands a person runs most (and every Tab press) against `python -c pass`.

Target (issue 13): `gtd --help`, `gtd config show`, `gtd status` and shell completion (bash, zsh, fish)
each take at most 4x the bare interpreter start (`python -c pass`, the same interpreter), measured
interleaved in the same run. `gtd status` is timed on a clean repository and on one with the person's
uncommitted edits (a fix, feedback markers, a new file: what makes it read diffs).

Run: .venv/bin/python benchmarks/bench_startup.py [--runs N]   (the machine is shared: 30+ runs)
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


def _edited_repo(path: Path, env: dict[str, str]) -> Path:
    """A repository with a plan, and the person's uncommitted edits: a fix, feedback markers, a new file."""
    repo = git_repo(path, env)
    (repo / "TODO.md").write_text("# Goal\n\n## Action items\n\n- [ ] One\n  - Tests: t\n\n## Open questions\n\n"
                                  "## Learnings\n")
    for i in range(6):
        (repo / f"mod{i}.py").write_text("".join(f"line {n}\n" for n in range(40)))
    git = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", "-C", str(repo)]
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "📝 plan: Goal"], check=True, env=env)
    for i in range(6):
        with open(repo / f"mod{i}.py", "a") as out:
            out.write("# TODO: handle the empty case\n" if i % 2 else "fixed = True\n")
    (repo / "notes.md").write_text("new file\n")
    return repo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    tmp = temp_dir("gtd-bench-startup-")
    try:
        env = hermetic_env(tmp)
        repo = git_repo(tmp / "repo", env)
        (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "true", "testRetries": 2}) + "\n")
        gtd = gtd_command()
        edited = _edited_repo(tmp / "edited", env)

        def tab(shell: str, line: str) -> dict[str, str]:
            if shell == "bash":
                words = line.split() + ([""] if line.endswith(" ") else [])
                return {"_GTD_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
            return {"_GTD_COMPLETE": f"complete_{shell}", "_TYPER_COMPLETE_ARGS": line,
                    "_TYPER_COMPLETE_FISH_ACTION": "get-args"}

        cases = {
            "python -c pass (baseline)": runner([sys.executable, "-c", "pass"], cwd=repo, env=env),
            "gtd --help": runner([*gtd, "--help"], cwd=repo, env=env),
            "gtd config show": runner([*gtd, "config", "show"], cwd=repo, env=env),
            "gtd config show --json": runner([*gtd, "config", "show", "--json"], cwd=repo, env=env),
        }
        for shell, line in (("bash", "gtd sa"), ("bash", "gtd sandbox run --"), ("zsh", "gtd "),
                            ("zsh", "gtd sandbox run --"), ("fish", "gtd "), ("fish", "gtd sandbox run --")):
            cases[f"completion: {line}<Tab> ({shell})"] = runner(gtd, cwd=repo, env=env, extra_env=tab(shell, line))
        cases["gtd status"] = runner([*gtd, "status"], cwd=repo, env=env)
        cases["gtd status --json"] = runner([*gtd, "status", "--json"], cwd=repo, env=env)
        cases["gtd status (uncommitted edits)"] = runner([*gtd, "status"], cwd=edited, env=env)
        cpu: dict[str, float] = {}
        medians = interleaved(cases, args.runs, cpu=cpu)
        base, base_cpu = medians.pop("python -c pass (baseline)"), cpu["python -c pass (baseline)"]
        rows = [("python -c pass (baseline)", f"{base:.1f} ms (cpu {base_cpu:.0f})", "1.00x (cpu 1.00x)", "", None)]
        for name, ms in medians.items():
            ratio = ms / base
            rows.append((name, f"{ms:.1f} ms (cpu {cpu[name]:.0f})", f"{ratio:.2f}x (cpu {cpu[name] / base_cpu:.2f}x)",
                         f"<= {TARGET:.0f}x", ratio <= TARGET))
        print(f"CLI start-up, median of {args.runs} interleaved runs ({' '.join(gtd)}); 'met' is judged on wall time,")
        print("the CPU time (user + system, less disturbed by a busy machine) is shown beside it")
        print(table(rows))
        missed = [name for name, ms in medians.items() if ms / base > TARGET]
        print(f"\n{len(medians) - len(missed)} of {len(medians)} within {TARGET:.0f}x"
              + (f"; not met: {', '.join(missed)}" if missed else ""))
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
