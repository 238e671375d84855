"""Red team: the names of generated bulk the agent leaves (node_modules/, a virtualenv) are written
to `.git/info/exclude` by gtd. They are the agent's names: a glob (`*`) or a newline in one must
not become a pattern of its own that hides every later file from gtd's commits and `gtd status`."""

from __future__ import annotations

import os

import pytest

from gtd.workflow import git as gitops
from gtd.workflow.unsafe import find_unsafe

PLANTED = {
    "glob": ["*/pyvenv.cfg", "*/lib/x.py"],  # a virtualenv marker in a dir named '*'
    "bracket": ["[a-z]*/node_modules/m.js"],
    "newline": ["a\n*\nb/node_modules/m.js"],  # a name splitting into the pattern '*'
    "negation": ["!keep/node_modules/m.js", "#x/node_modules/m.js", "sp /node_modules/m.js"],
    "not utf-8": [os.fsdecode(b"\x9b\xff/node_modules/m.js")],
}


@pytest.mark.parametrize("files", PLANTED.values(), ids=PLANTED.keys())
def test_bulk_names_are_excluded_literally(repo, files):
    for name in files:
        path = os.fsencode(repo) + b"/" + os.fsencode(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("x\n")
    bulk = [e.path for e in find_unsafe([c.path for c in gitops.changes(repo) if c.status == "??"]) if e.why == "bulk"]
    assert bulk
    excluded = gitops.exclude_locally(repo, bulk)
    assert excluded == [b for b in bulk if "\n" not in b]  # what the build's warning names as excluded
    assert gitops.exclude_locally(repo, bulk) == excluded  # already there: still excluded, not written twice
    (repo / "src").mkdir()
    (repo / "src" / "new.py").write_text("print(1)\n")
    (repo / "top.py").write_text("print(2)\n")
    left = {c.path for c in gitops.changes(repo) if c.status == "??"}
    assert {"src/new.py", "top.py"} <= left  # the person's next files are still seen and committed
    # what the agent generated is excluded by its literal name; a name with a line break is not
    # written at all (it stays out of gtd's commit through leave_out, as every bulk does)
    assert left & set(files) == {f for f in files if "\n" in f}


def test_bulk_left_out_of_the_build_commit_by_its_literal_name(repo):
    """leave_out names are the agent's, and git reads them as pathspecs: a dir named `:!x` (pathspec
    magic: everything *but* x) with a pyvenv.cfg must not unstage every other file, which took the
    agent's work out of its build commit (to be committed later as the person's own 🔧 fix)."""
    (repo / ":!x").mkdir()
    (repo / ":!x" / "pyvenv.cfg").write_text("home = /usr\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print(1)\n")
    bulk = [e.path for e in find_unsafe([c.path for c in gitops.changes(repo) if c.status == "??"])]
    assert bulk == [":!x/"]
    sha = gitops.commit_all(repo, "build", leave_out=bulk)
    assert gitops.commit_files(repo, sha) == ["A\tsrc/app.py"]
    assert [(c.status, c.path) for c in gitops.changes(repo)] == [("??", ":!x/pyvenv.cfg")]
