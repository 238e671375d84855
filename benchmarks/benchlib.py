"""Shared by the benchmarks: a hermetic environment for timing gtd, interleaved medians, a ratio table.

Timings are only compared with baselines measured in the same run, interleaved round-robin, so a
busy shared machine slows both sides alike. Nothing here is a test: no benchmark asserts a time.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent


def gtd_command() -> list[str]:
    """The installed `gtd` entry point next to this interpreter (what a person runs), else `python -m gtd`."""
    script = Path(sysconfig.get_path("scripts")) / "gtd"
    return [str(script)] if script.exists() else [sys.executable, "-m", "gtd"]


def hermetic_env(tmp: Path) -> dict[str, str]:
    """A fresh HOME and XDG dirs, and byte-code caching on (as on a person's machine): a run that
    recompiled every module each time would measure the compiler, not gtd."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".local/state"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_DATA_HOME=str(home / ".local/share"),
               PYTHONPYCACHEPREFIX=str(tmp / "pycache"))
    return env


def git_repo(path: Path, env: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q", str(path)], check=True, env=env)
    (path / "README.md").write_text("bench\n")
    subprocess.run([*git, "-C", str(path), "add", "-A"], check=True, env=env)
    subprocess.run([*git, "-C", str(path), "commit", "-qm", "init"], check=True, env=env)
    return path


def timed(fn: Callable[[], object], runs: int) -> float:
    """Median wall milliseconds of `runs` calls of fn, one after another."""
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def interleaved(cases: dict[str, Callable[[], object]], runs: int, warmup: int = 2,
                cpu: dict[str, float] | None = None) -> dict[str, float]:
    """Median wall milliseconds per case, the cases run round-robin so load drift hits all of them
    alike. Cases made by `runner` also report the child's CPU time (user + system): its medians go
    into `cpu` when given, a figure a busy machine disturbs far less than wall time."""
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    cpu_samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, fn in cases.items():
            t = time.perf_counter()
            used = fn()
            samples[name].append((time.perf_counter() - t) * 1000)
            if isinstance(used, float):
                cpu_samples[name].append(used * 1000)
    if cpu is not None:
        cpu.update({name: statistics.median(v) for name, v in cpu_samples.items() if v})
    return {name: statistics.median(values) for name, values in samples.items()}


def runner(argv: Sequence[str], *, cwd: Path, env: dict[str, str], check: bool = True,
           extra_env: dict[str, str] | None = None) -> Callable[[], None]:
    full_env = {**env, **(extra_env or {})}

    def run() -> float:
        """Runs the command; returns the CPU seconds (user + system) it and its children used."""
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(list(argv), cwd=cwd, env=full_env, stdout=subprocess.DEVNULL,
                                    stderr=err, stdin=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if check and proc.returncode != 0:
                err.seek(0)
                raise SystemExit(f"benchmark command failed ({proc.returncode}): {' '.join(argv)}\n"
                                 f"{err.read().decode(errors='replace')[-2000:]}")
        return usage.ru_utime + usage.ru_stime
    return run


def table(rows: list[tuple[str, str, str, str, bool | None]]) -> str:
    """rows: (what, measured, against baseline, target, met) -> an aligned plain-text table."""
    head = ("what", "measured", "vs baseline", "target", "met")
    cells = [head] + [(a, b, c, d, "-" if m is None else ("yes" if m else "NO")) for a, b, c, d, m in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def temp_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
