"""Issue 22, class 5: every entry of the protected-name table (protected_names.TABLE), tried for real
inside bwrap at every level below `full`: read-only where it exists, quarantined (or refused) where the
agent creates it. The names are the table's own, so an entry added later is tested without a change here."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.policy.protected_names import ANY_DIR, HOME, REPO, TABLE

from sandbox_support import requires_bwrap, sh

pytestmark = [requires_bwrap, pytest.mark.bwrap]

LEVELS = [level for level in Level if level != Level.FULL]
WRITABLE_HOME = GtdConfig.model_validate({"sandbox": {"levels": {"readwrite": {"writablePaths": ["~"]}}}})
# gtd's .gtdrc.json is not watched while missing (gtd creates it itself when an approval is saved mid-run,
# docs/protected-paths.md); HOME's .gitconfig exists in the fixture HOME, and a repository at ~ has its own test.
NOT_CREATED = {(REPO, ".gtdrc.json"), (HOME, ".gitconfig"), (HOME, ".git")}
ROWS = [(entry.tool, entry.where, name) for entry in TABLE for name in entry.names]
# ANY_DIR names count in a subdirectory too (the person's CLI run there trusts them)
ROWS += [(tool, ANY_DIR, f"packages/app/{name}") for tool, where, name in ROWS if where == ANY_DIR]


def _root(where: str, repo: Path, home: Path) -> Path:
    return home if where == HOME else repo


def _rows(where: tuple[str, ...], created: bool) -> list[tuple[str, str, str]]:
    return [r for r in ROWS if r[1] in where and not (created and (r[1] if r[1] != ANY_DIR else REPO, r[2]) in NOT_CREATED)
            and not (r[1] == HOME and r[2] == ".git")]


def _write_each(rows, repo: Path, home: Path) -> str:
    """Shell: write each name (as a file, or a file inside it when it already is a directory). The script
    is a file in the repository (too long for one argument), run by `sh`."""
    lines = []
    for _, where, name in rows:
        p = _root(where, repo, home) / name
        lines.append(f"mkdir -p '{p.parent}' 2>/dev/null; if [ -d '{p}' ]; then echo x > '{p}/planted'; "
                     f"else echo x > '{p}'; fi")
    (repo / "plant.sh").write_text("\n".join(lines) + "\n")
    return "sh plant.sh"


def test_the_table_names_the_tool_and_what_it_runs_for_every_entry():
    assert all(entry.tool and entry.runs and entry.names for entry in TABLE)
    names = [(e.where, n) for e in TABLE for n in e.names]
    assert len(names) == len(set(names))  # one entry per name and place
    for name in (".devcontainer.json", ".qwen", ".kilocode", ".crush.json", "crush.json", ".config/mise.toml",
                 "mise/config.toml", ".mise.local.toml", "mise.local.toml", ".tool-versions"):
        assert any(name in e.names for e in TABLE if e.where != HOME), name


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.value)
def test_every_entry_is_in_the_policy_at_every_level_below_full(repo, home, level):
    policy = build_policy(WRITABLE_HOME, workspace=repo, level=level, home=home)
    protected = set(policy.protected)
    missing = [(tool, name) for tool, where, name in ROWS if not name.startswith("packages/")
               and _root(where, repo, home) / name not in protected]
    assert missing == []


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.value)
def test_existing_entries_are_read_only_at_every_level_below_full(sandbox, repo, home, level):
    rows = _rows((REPO, ANY_DIR, HOME), created=False)
    for _, where, name in rows:
        p = _root(where, repo, home) / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("orig\n")
    s = sandbox(level, config=WRITABLE_HOME)
    r = sh(s, _write_each(rows, repo, home) + "\necho ok > work.txt", repo, timeout=120)
    assert "Read-only file system" in r.err or "Permission denied" in r.err
    s.close()
    changed = [(tool, name) for tool, where, name in rows if (_root(where, repo, home) / name).read_text() != "orig\n"]
    assert changed == []
    if level != Level.READONLY:
        assert (repo / "work.txt").read_text() == "ok\n"  # ordinary work was writable: the refusals are the table's


@pytest.mark.parametrize("level", LEVELS, ids=lambda level: level.value)
def test_created_entries_are_quarantined_at_every_level_below_full(sandbox, repo, home, level):
    rows = _rows((REPO, ANY_DIR, HOME), created=True)
    s = sandbox(level, config=WRITABLE_HOME)
    sh(s, _write_each(rows, repo, home) + "\necho ok > work.txt", repo, timeout=120)
    s.close()
    left = [(tool, name) for tool, where, name in rows if (_root(where, repo, home) / name).exists()]
    assert left == []
    if level != Level.READONLY:
        assert (repo / "work.txt").read_text() == "ok\n"
        quarantined = {v.target for v in s.violations if "quarantined" in v.detail}
        # each created name is reported, itself or the first new directory on the way to it
        unreported = [(tool, name) for tool, where, name in rows if where != HOME
                      and not any(str(repo / name) == q or str(repo / name).startswith(q + "/") for q in quarantined)]
        assert unreported == []
