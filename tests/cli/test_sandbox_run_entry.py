"""`gtd sandbox run` through the console script's fast entry (cli/entry.py -> cli/sandbox_run.py), which
skips typer: it must parse exactly what the typer command accepts, hand everything else to typer, and
enforce the same boundary as the typer command (both call `run_in_sandbox`; these tests pin that)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.cli.sandbox_run import parse_run_args
from gtd.config.levels import Level, Phase

FAST = [sys.executable, "-m", "gtd"]  # gtd/__main__.py: the same entry as the console script
TYPER = [sys.executable, "-m", "gtd.cli.sandbox_cmd"]  # the typer command, no fast entry


def test_parses_what_the_typer_command_takes():
    parsed = parse_run_args(["--level", "network", "--phase=build", "-C", "sub", "--non-interactive",
                             "--pending-json", "p.json", "--", "make", "-j2"])
    assert parsed == {"command": ["make", "-j2"], "phase": Phase.BUILD, "level": Level.NETWORK,
                      "directory": Path("sub"), "non_interactive": True, "pending_json": Path("p.json")}
    # options end at the command's first word: its own options are its own
    assert parse_run_args(["ls", "--level", "full"])["command"] == ["ls", "--level", "full"]
    assert parse_run_args(["--", "--level"])["command"] == ["--level"]


@pytest.mark.parametrize("args", [
    [], ["--"], ["--help"], ["-h"], ["--level", "bogus", "--", "true"], ["--level"], ["--unknown", "true"],
    ["--level", "readonly", "--level", "network", "--", "true"], ["-C=dir", "true"], ["--non-interactive=1", "true"],
])
def test_anything_else_is_left_to_typer(args):
    assert parse_run_args(args) is None


PROBE = """
import gc, json, sys
from gtd.cli.entry import main
sys.argv[0] = "gtd"
try:
    main()
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nPROBE:" + json.dumps([code, sorted(m for m in sys.modules if m.split(".")[0] in
                                            ("typer", "click", "pydantic", "rich", "tomlkit", "dataclasses",
                                             "hashlib", "_hashlib", "hmac", "platformdirs", "tempfile", "shutil",
                                             "random", "typing", "datetime", "base64", "binascii", "ctypes")),
                                            [gc.isenabled(), gc.get_freeze_count() > 0]]))
"""


def probe(args: list[str], cwd, env: dict | None = None) -> tuple[int, list[str], subprocess.CompletedProcess]:
    code, modules, _, result = probe_with_gc(args, cwd, env)
    return code, modules, result


def probe_with_gc(args: list[str], cwd, env: dict | None = None):
    """gtd's exit status, the unwanted modules it imported, [garbage collection on, start-up's objects
    frozen] at its end, and the process's result."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=60, env=env)
    code, modules, gc_state = json.loads(result.stderr.rsplit("PROBE:", 1)[1])
    return code, modules, gc_state, result


@pytest.mark.bwrap
def test_sandbox_run_imports_no_typer_and_falls_back_for_help(repo):
    """Nor `dataclasses` (~20 ms with the classes it builds, issue 13): the sandbox's records are gtd.record's;
    nor OpenSSL (hashlib, hmac: gtd.digest), platformdirs (gtd.paths.user_dir), shutil (gtd.which) or what
    they import (tempfile, random, zlib, bz2, lzma): ~9 ms together; nor `typing` (gtd's modules import it
    for type checkers only), ~2 ms; nor `datetime` (~2 ms) while nothing was planted or refused, nor `base64` or
    `binascii` (the proxy's token), nor `ctypes` (~1.5 ms: the Landlock ABI is remembered per boot, the
    namespace helper loads it after its fork)."""
    subprocess.run([*FAST, "config", "show"], cwd=repo, capture_output=True, check=True)  # fills the config cache
    code, modules, _ = probe(["sandbox", "run", "--level", "readwrite", "--", "sh", "-c", "exit 5"], repo)
    # the first start builds the launcher and the seccomp filter (pyseccomp imports typing); the package-cache
    # overlay writes its fstab; the Landlock ABI is probed (ctypes) and remembered
    first_start_only = ("random", "shutil", "tempfile", "typing", "ctypes")
    assert (code, [m for m in modules if m.split(".")[0] not in first_start_only]) == (5, [])
    code, modules, _ = probe(["sandbox", "run", "--", "sh", "-c", "exit 6"], repo)
    assert (code, modules) == (6, [])
    # with an agent CLI on PATH, `provider: auto` picks it and imports its provider module for its needs
    bin_dir = repo.parent / "agent-bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "claude").chmod(0o755)
    code, modules, _ = probe(["sandbox", "run", "--", "sh", "-c", "exit 7"], repo,
                             {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert (code, modules) == (7, [])
    code, modules, result = probe(["sandbox", "run", "--help"], repo)
    assert code == 0 and "typer" in modules and "Run COMMAND inside the sandbox" in result.stdout


@pytest.mark.bwrap
def test_an_edited_config_is_validated_again_never_taken_from_the_cache(repo):
    """The validated config is cached per exact bytes of every config file: an edit after a cached run
    is a miss, validated again, and an invalid value stops gtd before anything runs."""
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"limits": {"processes": 64}}}))
    first = subprocess.run([*FAST, "sandbox", "run", "--", "sh", "-c", "echo ran"], cwd=repo, capture_output=True, text=True)
    assert (first.returncode, first.stdout) == (0, "ran\n"), first.stderr
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"limits": {"processes": "many"}}}))
    second = subprocess.run([*FAST, "sandbox", "run", "--", "sh", "-c", "echo ran"], cwd=repo, capture_output=True, text=True)
    assert second.returncode == 2 and second.stdout == ""
    assert "invalid config" in second.stderr and ".gtdrc.json" in second.stderr


BOUNDARY = r"""
for target in "$PWD/inside.txt" "$PWD/.git/hooks/pre-commit" /etc/gtd-probe "$HOME/.bashrc"; do
  if (echo x > "$target"); then echo "wrote $target"; else echo "refused $target"; fi
done
cat "$HOME/.ssh/id_test" 2>/dev/null && echo "read the key" || echo "key hidden"
mkfifo /tmp/f && echo "fifo in private tmp"
exit 9
"""


@pytest.mark.bwrap
def test_fast_entry_and_typer_command_enforce_the_same_boundary(repo, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_test").write_text("SECRET")
    env = {**os.environ, "HOME": str(home)}
    results = []
    for entry in (FAST, TYPER):
        r = subprocess.run([*entry, "sandbox", "run", "--level", "readwrite", "--", "sh", "-c", BOUNDARY],
                           cwd=repo, capture_output=True, text=True, env=env, timeout=60)
        results.append((r.returncode, r.stdout))
        assert "gtd sandbox: refused write" in r.stderr  # the refused writes are reported either way
        (repo / "inside.txt").unlink()
    assert results[0] == results[1]
    assert results[0] == (9, f"wrote {repo}/inside.txt\nrefused {repo}/.git/hooks/pre-commit\nrefused /etc/gtd-probe\n"
                             f"refused {home}/.bashrc\nkey hidden\nfifo in private tmp\n")


@pytest.mark.bwrap
def test_the_fast_entry_collects_garbage_again_once_the_command_runs(repo):
    """Collection is off while gtd starts the command (~2 ms of collections that free nothing) and on again,
    with start-up's objects frozen, while it runs: the proxy lives as long as the command."""
    subprocess.run([*FAST, "config", "show"], cwd=repo, capture_output=True, check=True)  # fills the config cache
    code, _, gc_state, _ = probe_with_gc(["sandbox", "run", "--", "sh", "-c", "exit 3"], repo)
    assert (code, gc_state) == (3, [True, True])
    code, _, gc_state, _ = probe_with_gc(["sandbox", "run", "--help"], repo)  # typer's: collection as usual
    assert (code, gc_state[0]) == (0, True)
