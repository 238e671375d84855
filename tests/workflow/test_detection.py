"""Test-command detection and the untracked files gtd refuses to commit (pure functions)."""

from __future__ import annotations

import json

from gtd.workflow.testcmd import detect, propose, resolve
from gtd.workflow.unsafe import find_unsafe


def test_package_json_test_script_wins_and_npm_placeholder_does_not(tmp_path):
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "vitest run"}}))
    assert detect(tmp_path).command == "npm test"
    (tmp_path / "pnpm-lock.yaml").write_text("")
    assert detect(tmp_path).command == "pnpm test"
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}))
    assert detect(tmp_path).command is None
    assert propose(tmp_path).command == "npm test"  # init still proposes one


def test_a_lockfile_bigger_than_gtd_reads_still_picks_the_runner(tmp_path):
    """Presence is checked without reading: a 2 MiB yarn.lock (common) is still yarn's."""
    from gtd.workspace_files import MAX_READ_BYTES

    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    (tmp_path / "yarn.lock").write_text("#" * (2 * MAX_READ_BYTES))
    assert detect(tmp_path).command == "yarn test"
    (tmp_path / "yarn.lock").unlink()
    (tmp_path / "yarn.lock").symlink_to(tmp_path / "package.json")  # never followed: not there
    assert detect(tmp_path).command == "npm test"


def test_pytest_runs_with_the_projects_own_venv(tmp_path):
    """An unactivated .venv (uv, poetry in-project): python3 would be whichever Python is first on PATH."""
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    found = detect(tmp_path)
    assert found.command == ".venv/bin/python -m pytest -q"
    assert found.source == "pyproject.toml [tool.pytest], with the project's .venv"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert propose(tmp_path).command == ".venv/bin/python -m pytest -q"


def test_python_rust_go_make(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert detect(tmp_path).command == "python3 -m pytest -q"
    (tmp_path / "tox.ini").write_text("[tox]\n")
    assert detect(tmp_path).command == "tox"
    (tmp_path / "noxfile.py").write_text("")
    assert detect(tmp_path).command == "nox"
    (tmp_path / "Makefile").write_text("build:\n\ttrue\ntest: build\n\tpytest\n")
    assert (detect(tmp_path).command, detect(tmp_path).source) == ("make test", "the Makefile's `test` target")
    other = tmp_path / "rust"
    other.mkdir()
    (other / "Cargo.toml").write_text("[package]\n")
    assert detect(other).command == "cargo test"
    go = tmp_path / "go"
    go.mkdir()
    (go / "go.mod").write_text("module x\n")
    assert detect(go).command == "go test ./..."


def test_configured_beats_detected_and_symlinks_are_not_followed(tmp_path):
    (tmp_path / "real.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    (tmp_path / "package.json").symlink_to(tmp_path / "real.json")
    assert detect(tmp_path).command is None
    assert resolve("make check", tmp_path).describe() == "test command: make check (configured)"


def test_secrets_listed_one_by_one_bulk_grouped():
    untracked = [".env", ".env.example", "config/.env.local", "deploy/server.pem", "id_ed25519", "id_utils.py",
                 "aws/credentials", "src/app.py", "node_modules/a/index.js", "node_modules/b/index.js",
                 "myenv/pyvenv.cfg", "myenv/lib/x.py", "pkg.egg-info/PKG-INFO"]
    found = {(e.path, e.why, e.files) for e in find_unsafe(untracked)}
    assert found == {(".env", "secret", 1), ("config/.env.local", "secret", 1), ("deploy/server.pem", "secret", 1),
                     ("id_ed25519", "secret", 1), ("aws/credentials", "secret", 1), ("node_modules/", "bulk", 2),
                     ("myenv/", "bulk", 2), ("pkg.egg-info/", "bulk", 1)}


def test_many_new_files_under_one_directory_are_bulk():
    found = find_unsafe([f"generated/f{i}.txt" for i in range(250)] + ["src/a.py"])
    assert [(e.path, e.files) for e in found] == [("generated/", 250)]


def test_absorbed_marker_comments_are_cut_and_code_is_never_cut():
    from gtd.workflow.markers import cited, strip_marker

    assert strip_marker("    # TODO: handle negatives\n", (4, None)) is None
    assert strip_marker("x = f()  # FIXME: slow\n", (9, None)) == "x = f()\n"
    assert strip_marker("  // hack: later\n", (2, None)) is None
    assert strip_marker('print("TODO: not a comment")\n', None) == 'print("TODO: not a comment")\n'
    assert strip_marker('print("TODO: x")  # y\n', (18, None)) == 'print("TODO: x")  # y\n'  # not in the comment
    assert strip_marker("a = 1; /* TODO: x */ b = 2\n", (7, 21)) == "a = 1; /* TODO: x */ b = 2\n"  # code after
    assert cited("see app.py:27 and notes.py:1", "app.py", 27)
    assert not cited("see app.py:270", "app.py", 27) and not cited("see myapp.py:27", "app.py", 27)


def _bare_tests_repo(tmp_path):
    """Only tests/test_*.py: no pyproject.toml, setup.py or conftest.py (git-tracked, as detection reads)."""
    import subprocess

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_math.py").write_text("import unittest\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    return tmp_path


def test_bare_test_files_use_unittest_without_pytest_on_path(tmp_path, monkeypatch):
    root = _bare_tests_repo(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the system python3, which has no pytest
    found = detect(root)
    assert found.command == "python3 -m unittest discover -s tests"
    assert "no pytest for python3 on PATH, so unittest" in found.describe()


def test_bare_test_files_use_pytest_when_python_on_path_has_it(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    root = _bare_tests_repo(tmp_path)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:/usr/bin:/bin")  # gtd's venv: pytest installed
    found = detect(root)
    assert found.command == "python3 -m pytest -q"
    assert "pytest is importable by python3 on PATH" in found.describe()
    (root / "pytest.py").write_text("raise SystemExit(0)\n")  # a planted module never answers for the host
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert detect(root).command == "python3 -m unittest discover -s tests"


def test_bare_test_files_use_the_projects_venv(tmp_path, monkeypatch):
    root = _bare_tests_repo(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    site = root / ".venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert detect(root).command == ".venv/bin/python -m unittest discover -s tests"
    (site / "pytest").mkdir()
    (site / "pytest" / "__init__.py").write_text("")
    found = detect(root)
    assert found.command == ".venv/bin/python -m pytest -q" and "pytest is in the project's .venv" in found.source
