"""Red team: generated bulk the agent leaves (node_modules/, a virtualenv) is left out of gtd's build
commit by the agent's names: a glob (`*`), a newline or pathspec magic in one must not widen what is
left out, and nothing is ever written to `.git/info/exclude` (issue 22: the person decides)."""

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
def test_bulk_is_left_out_by_its_literal_name_and_stays_visible(repo, files):
    for name in files:
        path = os.fsencode(repo) + b"/" + os.fsencode(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("x\n")
    (repo / "src").mkdir()
    (repo / "src" / "new.py").write_text("print(1)\n")
    (repo / "top.py").write_text("print(2)\n")
    bulk = [e.path for e in find_unsafe([c.path for c in gitops.changes(repo) if c.status == "??"]) if e.why == "bulk"]
    assert bulk
    sha = gitops.commit_all(repo, "build", leave_out=bulk)
    assert sorted(gitops.commit_files(repo, sha)) == ["A\tsrc/new.py", "A\ttop.py"]  # the agent's work is committed
    assert {c.path for c in gitops.changes(repo) if c.status == "??"} == set(files)  # what was left out is still seen
    assert not (repo / ".git" / "info" / "exclude").exists() or "node_modules" not in (repo / ".git/info/exclude").read_text()


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
