"""gtd's own overhead per phase: a whole `gtd plan` against the fake model server, against the same
agent CLI run directly (no gtd, no sandbox) on the same scripted conversation, in the same run.

gtd's overhead = gtd's wall time - the direct agent run's wall time: Python start-up, config, git
commits, the sandbox (bwrap, seccomp, proxy), parsing the agent's stream and checking TODO.md. The
agent CLI's own start-up and the model's answers are in both. Target (issue 13): at most 2 % of the
phase's wall time. The plan phase runs no tests, so nothing needs subtracting for them.

Run: PATH=<agent CLIs>:$PATH .venv/bin/python benchmarks/bench_phase_overhead.py [--agent pi] [--runs 5]
(the repository's pinned CLIs live in .tools/agents/bin; scripts/install-agents puts them there).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "providers")]

from benchlib import cleanup, git_repo, gtd_command, hermetic_env, table, temp_dir  # noqa: E402

TARGET = 0.02
PLAN = """# Hello file

## Action items
- [ ] Create hello.txt saying hi
  - Tests: `cat hello.txt` succeeds

## Open questions

## Learnings
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", default="pi", help="claude, opencode or pi")
    ap.add_argument("--runs", type=int, default=5)
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

        def script(repo: Path) -> None:
            todo = str(repo / "TODO.md")
            server.script([tool(t.read, {t.path: todo}), tool(t.write, {t.path: todo, "content": PLAN}), say("Planned.")])

        def through_gtd(n: int) -> float:
            repo = git_repo(tmp / f"gtd-{n}", env)
            script(repo)
            argv = [*gtd_command(), "plan", "make a hello file", "--provider", setup.name, "--non-interactive"]
            if setup.model:
                argv += ["--model", setup.model]
            start = time.perf_counter()
            result = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            took = time.perf_counter() - start
            if result.returncode != 0 or "# Hello file" not in (repo / "TODO.md").read_text():  # gtd may reformat it
                raise SystemExit(f"gtd plan failed ({result.returncode}):\n{result.stderr[-3000:]}")
            return took

        def direct(n: int) -> float:
            repo = git_repo(tmp / f"direct-{n}", env)
            (repo / "TODO.md").write_text("")
            script(repo)
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

        imports = [sys.executable, "-c", "import gtd.cli.app, gtd.cli.context, gtd.workflow.plan, gtd.providers.runner, "
                   "gtd.sandbox.session, gtd.escalation.escalator, gtd.config.schema"]

        def import_time() -> float:
            start = time.perf_counter()
            subprocess.run(imports, cwd=tmp, env=env, check=True)
            return time.perf_counter() - start

        through_gtd(-1), direct(-1), import_time()  # warm caches (node's compile cache, pyc files)
        gtd_times, direct_times, import_times = [], [], []
        for n in range(args.runs):
            gtd_times.append(through_gtd(n))
            direct_times.append(direct(n))
            import_times.append(import_time())
        server.close()
        g, d = statistics.median(gtd_times) * 1000, statistics.median(direct_times) * 1000
        overhead = g - d
        share = overhead / g
        rows = [
            (f"{setup.name} run directly (baseline)", f"{d:.0f} ms", "1.00x", "", None),
            (f"gtd plan with {setup.name} (sandboxed)", f"{g:.0f} ms", f"{g / d:.2f}x", "", None),
            ("gtd's own overhead", f"{overhead:.0f} ms", f"{share:.1%} of the phase", f"<= {TARGET:.0%}", share <= TARGET),
            ("  of which: Python start + the phase's imports", f"{statistics.median(import_times) * 1000:.0f} ms",
             f"{statistics.median(import_times) * 1000 / g:.1%} of the phase", "(reported)", None),
        ]
        print(f"Phase overhead: plan phase, {setup.name} against the fake model server, median of {args.runs} interleaved runs")
        print(table(rows))
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
