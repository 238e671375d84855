"""gtd never imports from the workspace (issue 9, class 11): Python puts the current directory first
on sys.path for `python -m`, so modules planted in a repository would run as gtd, on the host."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PLANTED = ("typer", "json", "typing", "enum", "pydantic", "platformdirs", "tomlkit", "filelock", "subprocess",
           "tempfile", "hashlib", "dataclasses", "shutil", "textwrap", "signal", "linecache", "tokenize")
# What Python's runpy imports for `python -m` before gtd's first line runs: planted in the current
# directory, these run under a plain `python -m gtd` whatever gtd does (an editable install's import hook
# happens to load them first; a regular install does not). `python -P -m gtd` and the `gtd` command never
# run them (docs/security-model.md, residual risks).
BEFORE_GTD = ("importlib", "warnings", "contextlib", "functools", "types", "collections", "operator", "keyword",
              "reprlib")


@pytest.fixture
def planted(repo) -> Path:
    marker = repo.parent / "planted-code-ran"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in PLANTED:
        (repo / f"{name}.py").write_text(payload)
    (repo / "rich").mkdir()
    (repo / "rich" / "__init__.py").write_text(payload)
    return marker


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, "COLUMNS": "120"}, timeout=120)


@pytest.mark.parametrize("args", [["--help"], ["config", "show"], ["sandbox", "explain", "--phase", "build"]])
def test_python_m_gtd_in_a_workspace_never_imports_planted_modules(repo, planted, args):
    result = _run([sys.executable, "-m", "gtd", *args], repo)
    assert not planted.exists(), f"planted modules ran: {planted.read_text()}"
    assert result.returncode == 0, result.stderr


def test_python_m_a_gtd_submodule_never_imports_planted_modules(repo, planted):
    result = _run([sys.executable, "-m", "gtd.cli.sandbox_cmd", "sandbox", "explain"], repo)
    assert not planted.exists(), f"planted modules ran: {planted.read_text()}"
    assert result.returncode == 0, result.stderr


@pytest.fixture
def planted_everywhere(repo, planted) -> Path:
    """Also the modules runpy imports before gtd's code (only -P or the console script keep those out)."""
    for name in BEFORE_GTD:
        (repo / f"{name}.py").write_text(f"open({str(planted)!r}, 'a').write(__name__ + '\\n')\n")
    return planted


def test_python_safe_path_m_gtd_never_imports_planted_modules(repo, planted_everywhere):
    result = _run([sys.executable, "-P", "-m", "gtd", "sandbox", "explain"], repo)
    assert not planted_everywhere.exists(), f"planted modules ran: {planted_everywhere.read_text()}"
    assert result.returncode == 0, result.stderr


def test_the_gtd_console_script_never_imports_planted_modules(repo, planted_everywhere):
    script = Path(sys.executable).parent / "gtd"
    if not script.exists():
        pytest.skip("the gtd console script is not installed next to this interpreter")
    result = _run([str(script), "sandbox", "explain"], repo)
    assert not planted_everywhere.exists(), f"planted modules ran: {planted_everywhere.read_text()}"
    assert result.returncode == 0, result.stderr



def test_the_current_directory_is_dropped_from_sys_path_however_it_is_spelled(repo, tmp_path):
    """gtd's guard drops every sys.path entry that is the current directory: spelled through a symlink
    (PYTHONPATH=~/link-to-project) or with a trailing `/.` too, and nothing else."""
    link = tmp_path / "link-to-project"
    link.symlink_to(repo)
    entries = [str(link), f"{repo}/.", str(repo), str(tmp_path), str(tmp_path / "absent")]
    probe = (f"import sys; sys.argv[0] = 'gtd'; sys.path[:0] = {entries!r}; import gtd; "
             f"print([entry in sys.path for entry in {entries!r}])")
    result = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["[False,", "False,", "False,", "True,", "True]"], result.stderr
