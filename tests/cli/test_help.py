"""Every command's --help shows examples, names value types (never `<bool>`), and says what a default is."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from gtd.cli.app import app


def _commands(command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and group, as the words after `gtd`."""
    found = [path]
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        found += _commands(sub, path + (name,))
    return found


COMMANDS = _commands(typer.main.get_command(app))


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(("gtd",) + p))
def test_help_shows_examples_and_no_bool_metavar(path):
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="gtd")
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.output and "\n    gtd " in result.output, result.output
    assert "<bool>" not in result.output and "BOOLEAN" not in result.output


def test_sandbox_run_help_says_which_level_it_uses_by_default():
    result = CliRunner().invoke(app, ["sandbox", "run", "--help"], prog_name="gtd")
    assert "else readonly" in " ".join(result.output.split())
