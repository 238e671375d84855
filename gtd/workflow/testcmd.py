"""Which command tests this project: the configured one, else one detected from the project's files.

"No tests" must never read as "tests green": when nothing is configured or detected, every build
says so loudly and the build commit's body records that the step was not tested.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from gtd import workspace_files
from gtd.record import record

# npm's placeholder from `npm init`: a test script that only fails.
_NPM_PLACEHOLDER = re.compile(r"no test specified", re.IGNORECASE)


@record(frozen=True)
class TestCommand:
    command: str | None
    source: str  # "config", or what it was detected from

    def describe(self) -> str:
        if self.command is None:
            return "no test command: none configured (`testCommand`) and none detected"
        if self.source == "config":
            return f"test command: {self.command} (configured)"
        return f"test command: {self.command} (detected from {self.source}; set `testCommand` to choose another)"


def _text(root: Path, name: str) -> str | None:
    """A project file's text: regular files only, never through a symlink, capped (gtd.workspace_files)."""
    try:
        return workspace_files.read_text(root, name)
    except (OSError, workspace_files.UnsafeWorkspacePath):
        return None


def _there(root: Path, name: str) -> bool:
    """Whether the project has this regular file (never through a symlink), without reading it: a
    lockfile bigger than what gtd reads is still there."""
    try:
        return workspace_files.is_file(root, name)
    except (OSError, workspace_files.UnsafeWorkspacePath):
        return False


def _package_json_test(root: Path) -> str | None:
    text = _text(root, "package.json")
    if text is None:
        return None
    try:
        scripts = json.loads(text).get("scripts") or {}
    except (ValueError, AttributeError):
        return None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or not test.strip() or _NPM_PLACEHOLDER.search(test):
        return None
    if _there(root, "pnpm-lock.yaml"):
        return "pnpm test"
    if _there(root, "yarn.lock"):
        return "yarn test"
    if _there(root, "bun.lockb") or _there(root, "bun.lock"):
        return "bun run test"
    return "npm test"


def _uses_pytest(root: Path) -> str | None:
    if _there(root, "pytest.ini"):
        return "pytest.ini"
    if "[tool.pytest" in (_text(root, "pyproject.toml") or ""):
        return "pyproject.toml [tool.pytest]"
    if "[tool:pytest]" in (_text(root, "setup.cfg") or ""):
        return "setup.cfg [tool:pytest]"
    if _there(root, "conftest.py") or _there(root, "tests/conftest.py"):
        return "conftest.py"
    if _there(root, "pyproject.toml") or _there(root, "setup.py"):
        from gtd.workflow import git

        if git.git(root, "ls-files", "--", "tests/test_*.py", "test_*.py", check=False).strip():
            return "test_*.py files in a Python project"
    return None


# Where uv, poetry (in-project) and `python -m venv` put a project's own environment.
PROJECT_VENVS = (".venv", "venv")


def _pytest(root: Path, source: str) -> TestCommand:
    """pytest with the project's own virtualenv when it has one: `python3` is whichever Python is first
    on PATH (gtd's own, under pipx), which lacks the project's dependencies unless the venv is activated."""
    for venv in PROJECT_VENVS:
        if _there(root, f"{venv}/pyvenv.cfg"):  # bin/python itself is a symlink, never followed
            return TestCommand(f"{venv}/bin/python -m pytest -q", f"{source}, with the project's {venv}")
    return TestCommand("python3 -m pytest -q", source)


def _venv_has_pytest(root: Path, venv: str) -> bool:
    """Whether the project's own virtualenv has pytest installed (a regular file, never through a symlink)."""
    for lib in ("lib", "lib64"):
        # listed through no symlink: a symlinked venv or lib is not the project's own
        versions = [name for name in workspace_files.names_in(root, f"{venv}/{lib}") or () if name.startswith("python")]
        if any(_there(root, f"{venv}/{lib}/{v}/site-packages/pytest/__init__.py") for v in versions):
            return True
    return False


def _path_python_has_pytest() -> bool:
    """Whether `python3 -m pytest` would work with the python3 first on PATH: asked in isolated mode (-I)
    from / so nothing in the workspace (a planted pytest.py) can answer or run."""
    python = shutil.which("python3")
    if python is None:
        return False
    try:
        return subprocess.run([python, "-I", "-c", "import importlib.util, sys; "
                               "sys.exit(importlib.util.find_spec('pytest') is None)"], cwd="/",
                              capture_output=True, timeout=20, env={"PATH": os.environ.get("PATH", "")}).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _bare_python_tests(root: Path) -> TestCommand | None:
    """Test files with no Python project around them (no pyproject.toml, setup.py or conftest.py):
    pytest when the project's environment has it, else the standard library's unittest."""
    from gtd.workflow import git

    in_tests = bool(git.git(root, "ls-files", "--", "tests/test_*.py", check=False).strip())
    if not in_tests and not git.git(root, "ls-files", "--", "test_*.py", check=False).strip():
        return None
    where = "tests/test_*.py" if in_tests else "test_*.py"
    discover = "discover -s tests" if in_tests else "discover"
    for venv in PROJECT_VENVS:
        if _there(root, f"{venv}/pyvenv.cfg"):
            if _venv_has_pytest(root, venv):
                return TestCommand(f"{venv}/bin/python -m pytest -q", f"{where} files; pytest is in the project's {venv}")
            return TestCommand(f"{venv}/bin/python -m unittest {discover}",
                               f"{where} files; no pytest in the project's {venv}, so unittest")
    if _path_python_has_pytest():
        return TestCommand("python3 -m pytest -q", f"{where} files; pytest is importable by python3 on PATH")
    return TestCommand(f"python3 -m unittest {discover}", f"{where} files; no pytest for python3 on PATH, so unittest")


def _make_test(root: Path) -> bool:
    for name in ("Makefile", "makefile", "GNUmakefile"):
        if re.search(r"^test\s*:", _text(root, name) or "", re.MULTILINE):
            return True
    return False


def detect(root: Path) -> TestCommand:
    """The project's own test command, from its files (first match wins, in this order)."""
    npm = _package_json_test(root)
    if npm:
        return TestCommand(npm, "package.json scripts.test")
    if _make_test(root):
        return TestCommand("make test", "the Makefile's `test` target")
    if _there(root, "noxfile.py"):
        return TestCommand("nox", "noxfile.py")
    if _there(root, "tox.ini") or "[tool.tox" in (_text(root, "pyproject.toml") or ""):
        return TestCommand("tox", "tox.ini")
    pytest_source = _uses_pytest(root)
    if pytest_source:
        return _pytest(root, pytest_source)
    if _there(root, "Cargo.toml"):
        return TestCommand("cargo test", "Cargo.toml")
    if _there(root, "go.mod"):
        return TestCommand("go test ./...", "go.mod")
    return _bare_python_tests(root) or TestCommand(None, "")


def propose(root: Path) -> TestCommand:
    """For `gtd init`: what detect() finds, else the ecosystem's usual runner as a first guess."""
    found = detect(root)
    if found.command:
        return found
    if _there(root, "pyproject.toml") or _there(root, "setup.py"):
        return _pytest(root, "a Python project (pyproject.toml/setup.py): a guess")
    if _there(root, "package.json"):
        return TestCommand("npm test", "package.json (no test script yet): a guess")
    return found


def resolve(configured: str | None, root: Path) -> TestCommand:
    if configured:
        return TestCommand(configured, "config")
    return detect(root)


NOT_TESTED_NOTE = ("Not tested: no test command is configured (`testCommand`) and none was detected, "
                   "so nothing checked this step.")
