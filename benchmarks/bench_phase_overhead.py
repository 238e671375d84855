"""gtd's own overhead per phase: `gtd plan` then `gtd build` (with a test command) against the fake
model server, each as a person runs it (a fresh process), on fresh repositories, several runs.

overhead = the command's wall time - the time the agent CLI process ran - the time the test command ran.
Both come from gtd's audit log (`agent_exit` and `test_run` carry `seconds`: from starting the process,
its sandbox's start included, until it was reaped). Everything else is gtd's: Python start-up and imports,
config, git calls and commits, the sandbox session's set-up and teardown, checking and formatting TODO.md,
rendering events. Target (issue 13): at most 2 % of the phase's wall time.

A second view, the same overhead against realistic phase lengths: gtd's own time per phase hardly depends
on how long the agent runs (start-up, config, commits, sandbox set-up), while a real model takes tens of
seconds to minutes per phase; the share is printed for agent runs of 30 s, 2 min and 10 min (measured
overhead / (overhead + that agent time + the tests' time)). The fake model answers at once, so a fake-model
phase (~1.5-2 s) makes every millisecond of gtd's count a hundred times more.

A third view of the plan phase: gtd plan against the same agent CLI run directly (no gtd, no sandbox)
on the same scripted conversation, interleaved. That difference also holds what the sandbox costs the
agent (bwrap and the launcher start, its network through gtd's forward to the model API).

With --baseline-code DIR (a checkout of gtd's code from before a change, e.g. `git worktree add DIR <commit>`),
every round also runs both phases with that code (PYTHONPATH=DIR, same interpreter and venv), interleaved, and
the medians of both are printed side by side: a before/after comparison from one run on a shared machine.

Run: PATH=<agent CLIs>:$PATH .venv/bin/python benchmarks/bench_phase_overhead.py [--agent pi] [--runs 5]
(the repository's pinned CLIs live in .tools/agents/bin; scripts/install-agents puts them there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "providers")]

from benchlib import cleanup, git_repo, gtd_command, hermetic_env, table, temp_dir  # noqa: E402

TARGET = 0.02
REALISTIC_AGENT_SECONDS = {"30 s": 30, "2 min": 120, "10 min": 600}  # a real model's phase: seconds to minutes
ITEM = "Create hello.txt saying hi"
PLAN = f"""# Hello file

## Action items
- [ ] {ITEM}
  - Tests: `cat hello.txt` succeeds

## Open questions

## Learnings
"""
CONFIG = {"testCommand": "cat hello.txt", "baselineTests": "off"}


def audit_entries(repo: Path) -> list[dict]:
    """The project's audit log (gtd's state dir under the hermetic XDG_STATE_HOME this process also uses)."""
    from gtd.paths import project_state_dir

    path = project_state_dir(repo) / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", default="pi", help="claude, opencode or pi")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline-code", type=Path, help="a checkout of older gtd code, run interleaved for comparison")
    args = ap.parse_args()

    from agents import AGENTS_BIN, SETUPS
    from fakemodel.server import FakeModelServer, say, tool

    from gtd.config.levels import Phase
    from gtd.providers.base import AgentRequest
    from gtd.providers.registry import get_provider

    setup = SETUPS[args.agent]
    tmp = temp_dir("gtd-bench-phase-")
    try:
        env = hermetic_env(tmp)
        if AGENTS_BIN.is_dir():
            env["PATH"] = f"{AGENTS_BIN}{os.pathsep}{env['PATH']}"
        if shutil.which(setup.name, path=env["PATH"]) is None:
            raise SystemExit(f"agent CLI '{setup.name}' not found on PATH (scripts/install-agents installs it)")
        server = FakeModelServer().start()
        env.update(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="fake-key",
                   OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="fake-key")
        os.environ.update({k: env[k] for k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
                                                "XDG_DATA_HOME", "PATH", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY",
                                                "OPENAI_BASE_URL", "OPENAI_API_KEY")})
        from gtd.config.schema import GtdConfig

        provider = get_provider(setup.name, GtdConfig(provider=setup.name))
        t = setup.files

        def gtd(repo: Path, *argv: str, code: dict | None = None) -> dict:
            """One gtd command; its wall time, and the agent's and the tests' time from the audit log."""
            before = len(audit_entries(repo))
            command = [*gtd_command(), *argv, "--provider", setup.name, "--non-interactive"]
            if setup.model:
                command += ["--model", setup.model]
            started_at, start = time.time(), time.perf_counter()
            result = subprocess.run(command, cwd=repo, env={**env, **(code or {})}, capture_output=True, text=True,
                                    stdin=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            if result.returncode != 0:
                raise SystemExit(f"gtd {argv[0]} failed ({result.returncode}):\n{result.stderr[-3000:]}")
            entries = audit_entries(repo)[before:]
            agents = [e for e in entries if e["event"] == "agent_exit"]
            agent = sum(e["seconds"] for e in agents)
            tests = sum(e.get("seconds", 0) for e in entries if e["event"] == "test_run")
            # Where gtd's time went, from the audit log's timestamps (milliseconds): start-up and config
            # until the `run` record; then until the first agent started; the rest is after it.
            at = lambda e: datetime.fromisoformat(e["time"]).timestamp()  # noqa: E731
            run_record = next(e for e in entries if e["event"] == "run")
            agent_start = at(agents[0]) - agents[0]["seconds"]
            startup = at(run_record) - started_at
            before_agent = agent_start - at(run_record)
            overhead = wall - agent - tests
            return {"wall": wall, "agent": agent, "tests": tests, "overhead": overhead, "startup": startup,
                    "before": before_agent, "after": overhead - startup - before_agent}

        def phases(n: int | str, code: dict | None = None) -> dict[str, dict]:
            repo = git_repo(tmp / f"gtd-{n}", env)
            (repo / ".gtdrc.json").write_text(json.dumps(CONFIG) + "\n")
            subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
            subprocess.run(["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", "-C", str(repo), "commit",
                            "-qm", "configure gtd"], check=True, env=env)
            todo = str(repo / "TODO.md")
            server.script([tool(t.read, {t.path: todo}), tool(t.write, {t.path: todo, "content": PLAN}), say("Planned.")])
            plan = gtd(repo, "plan", "make a hello file", code=code)
            server.script([tool(t.write, {t.path: str(repo / "hello.txt"), "content": "hi\n"}), say("Built.")])
            build = gtd(repo, "build", code=code)
            if f"- [x] {ITEM}" not in (repo / "TODO.md").read_text():
                raise SystemExit("gtd build did not tick the item")
            return {"plan": plan, "build": build}

        def direct(n: int) -> float:
            repo = git_repo(tmp / f"direct-{n}", env)
            (repo / "TODO.md").write_text("")
            todo = str(repo / "TODO.md")
            server.script([tool(t.read, {t.path: todo}), tool(t.write, {t.path: todo, "content": PLAN}), say("Planned.")])
            spec = provider.command(AgentRequest(phase=Phase.PLAN, prompt="make a hello file: write the plan to TODO.md",
                                                 cwd=repo, model=setup.model, editable_paths=["TODO.md"]))
            start = time.perf_counter()
            result = subprocess.run(spec.argv, cwd=repo, env={**env, **spec.env}, capture_output=True,
                                    input=spec.stdin_data, stdin=None if spec.stdin_data else subprocess.DEVNULL)
            took = time.perf_counter() - start
            if result.returncode != 0 or (repo / "TODO.md").read_text() != PLAN:
                raise SystemExit(f"direct {setup.name} run failed ({result.returncode}):\n"
                                 f"{result.stderr.decode(errors='replace')[-3000:]}")
            return took

        baseline = {"PYTHONPATH": str(args.baseline_code.resolve())} if args.baseline_code else None
        phases(-1), direct(-1)  # warm caches (node's compile cache, pyc files, gtd's config and seccomp caches)
        if baseline:
            phases("baseline-warm", baseline)
        runs, directs, baseline_runs = [], [], []
        for n in range(args.runs):
            runs.append(phases(n))
            directs.append(direct(n))
            if baseline:
                baseline_runs.append(phases(f"baseline-{n}", baseline))
        server.close()

        ms = lambda seconds: f"{seconds * 1000:.0f} ms"  # noqa: E731
        print(f"Phase overhead: {setup.name} against the fake model server, {args.runs} runs "
              "(overhead = wall - agent CLI process - test command)")
        print("gtd's time split: start-up (interpreter, imports, config: until the audit's `run` record), before "
              "the agent (commits of your edits, prompt, sandbox set-up), after it (commit, formatting, teardown, exit)")
        print(f"{'run':>4}  {'phase':6} {'wall':>8} {'agent':>8} {'tests':>8} {'overhead':>9} {'share':>6}   "
              f"{'start-up':>8} {'before':>8} {'after':>8}")
        for n, run in enumerate(runs):
            for name, m in run.items():
                print(f"{n:>4}  {name:6} {ms(m['wall']):>8} {ms(m['agent']):>8} {ms(m['tests']):>8} "
                      f"{ms(m['overhead']):>9} {m['overhead'] / m['wall']:>6.1%}   "
                      f"{ms(m['startup']):>8} {ms(m['before']):>8} {ms(m['after']):>8}")
        rows = []
        for name in ("plan", "build"):
            wall = statistics.median(r[name]["wall"] for r in runs)
            overhead = statistics.median(r[name]["overhead"] for r in runs)
            share = statistics.median(r[name]["overhead"] / r[name]["wall"] for r in runs)
            rows.append((f"gtd {name}: wall", ms(wall), "", "", None))
            rows.append((f"gtd {name}: gtd's own time", ms(overhead), f"{share:.1%} of the phase", f"<= {TARGET:.0%}",
                         share <= TARGET))
            for part, label in (("startup", "start-up and config"), ("before", "before the agent"),
                                ("after", "after the agent")):
                rows.append((f"  of which {label}", ms(statistics.median(r[name][part] for r in runs)), "", "(reported)",
                             None))
        for label, seconds in REALISTIC_AGENT_SECONDS.items():
            for name in ("plan", "build"):
                overhead = statistics.median(r[name]["overhead"] for r in runs)
                tests = statistics.median(r[name]["tests"] for r in runs)
                share = overhead / (overhead + seconds + tests)
                rows.append((f"gtd {name}, were the agent to run {label}",
                             ms(overhead), f"{share:.2%} of the phase", f"<= {TARGET:.0%}", share <= TARGET))
        g = statistics.median(r["plan"]["wall"] for r in runs)
        d = statistics.median(directs)
        rows.append((f"{setup.name} run directly (plan's baseline)", ms(d), "1.00x", "", None))
        rows.append(("gtd plan - direct run (incl. the sandbox)", ms(g - d), f"{(g - d) / g:.1%} of the phase",
                     "(reported)", None))
        print()
        print(table(rows))
        if baseline_runs:
            compare = []
            for name in ("plan", "build"):
                for part, label in (("overhead", "gtd's own time"), ("startup", "  start-up and config"),
                                    ("before", "  before the agent"), ("after", "  after the agent")):
                    old = statistics.median(r[name][part] for r in baseline_runs)
                    new = statistics.median(r[name][part] for r in runs)
                    compare.append((f"gtd {name}: {label}", ms(new), f"{ms(old)} before ({new / old:.2f}x)", "",
                                    None))
                old_share = statistics.median(r[name]["overhead"] / r[name]["wall"] for r in baseline_runs)
                new_share = statistics.median(r[name]["overhead"] / r[name]["wall"] for r in runs)
                compare.append((f"gtd {name}: share of the phase", f"{new_share:.1%}", f"{old_share:.1%} before", "",
                                None))
            print(f"\nThis code against {args.baseline_code} (interleaved in the same rounds, medians):")
            print(table(compare))
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
