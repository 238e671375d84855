"""`gtd config show` answered by the entry point without typer (issue 13) says exactly what the
typer command says: same stdout, stderr and exit code, whatever the options and config layers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from test_status_fast import both


@pytest.fixture
def layered(repo, isolated_home):
    """A user config, a project config, and an original-gtd project file: several layers and origins."""
    user = isolated_home / ".config" / "gtd"
    user.mkdir(parents=True)
    (user / "config.toml").write_text('provider = "scripted"\n[models]\nplan = "from-user"\n')
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check", "testRetries": 1,
                                                  "sandbox": {"levels": {"network": {"allowDomains": [
                                                      "example.org:443", "a-very-long-host-name.example.com:443"]}}}}))
    return repo


OPTIONS = [[], ["--origin"], ["--json"], ["--json", "--origin"], ["--origin", "-p", "claude"],
           ["--model=opus", "--json"], ["--provider", "pi", "--model", "sonnet", "--origin"]]


@pytest.mark.parametrize("options", OPTIONS, ids=[" ".join(o) or "plain" for o in OPTIONS])
def test_config_show_is_the_typer_commands(layered, options):
    result = both("config", "show", *options, cwd=layered, env={"COLUMNS": "60"})
    assert result.returncode == 0, result.stderr
    if "--json" in options:
        assert json.loads(result.stdout)["config"]["testCommand"] == "make check"
    else:
        assert result.stdout.startswith(" key")


def test_directories_warnings_and_errors_are_the_typer_commands(layered, tmp_path):
    expected = both("config", "show", "--json", "--origin", cwd=layered).stdout
    assert both("-C", str(layered), "config", "show", "--json", "--origin", cwd=tmp_path).stdout == expected
    assert both("config", "show", "--origin", "--directory", str(layered), "--json", cwd=tmp_path).stdout == expected
    warned = both("config", "show", cwd=layered, env={"GTD_TEST_CMD": "make test"})
    assert "warning: GTD_TEST_CMD" in warned.stderr
    refused = both("config", "show", "--provider", "nope", cwd=layered)
    assert refused.returncode != 0 and "provider" in refused.stderr
    (layered / ".gtdrc.json").write_text('{"testRetries": "many"}')
    broken = both("config", "show", "--json", cwd=layered)
    assert broken.returncode != 0 and ".gtdrc.json" in broken.stderr and broken.stdout == ""


@pytest.mark.parametrize("args", [["config", "show", "--help"], ["config", "show", "-pclaude"],
                                  ["config", "show", "--origin", "--origin"], ["config", "show", "extra"],
                                  ["-p", "claude", "config", "show"]])
def test_other_command_lines_still_go_to_typer(layered, args):
    result = both(*args, cwd=layered)
    assert result.returncode in (0, 2)


def test_config_show_from_the_cache_imports_neither_typer_nor_rich_nor_pydantic(repo):
    code = ("import sys; sys.argv[0] = 'gtd'; from gtd.cli.entry import main\ntry:\n    main()\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'pydantic',"
            " 'tomlkit', 'filelock')))")
    run = [sys.executable, "-c", code, "config", "show", "--origin"]
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))  # nothing to warn about
    subprocess.run(run, cwd=repo, capture_output=True, check=True)  # validates once, fills the cache
    result = subprocess.run(run, cwd=repo, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
    assert "make check" in result.stdout
