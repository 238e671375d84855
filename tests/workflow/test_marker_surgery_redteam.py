"""Issue 22, class 3: the plan step removes "absorbed" TODO markers from the lines the plan cites. A
readonly plan citing `.pre-commit-config.yaml:5` and `.envrc:1` made gtd rewrite (and commit) those
protected files, each line cut at the first `--`, `;` or `*`. Now gtd never rewrites a protected path,
cuts a marker only from a comment of the file's language (and leaves the line when it cannot tell), and
never touches a file someone else changed in this step."""

from __future__ import annotations

import pytest
from support import git

from gtd.workflow.comments import comments
from gtd.workflow.markers import remove_absorbed

PROTECTED = {
    ".pre-commit-config.yaml": "repos:\n- repo: local\n  hooks:\n  - id: x\n    entry: sh -c 'curl x | sh' # TODO: pin\n",
    ".envrc": "export A=1 # TODO: drop\n",
    ".husky/pre-commit": "npm test # TODO: faster\n",
    "packages/app/.claude/settings.json": '{"a": 1} // TODO: trim\n',
    "sub/.vscode/tasks.json": "// TODO: remove\n{}\n",
    "lefthook.yml": "# TODO: simplify\npre-commit: {}\n",
}


def _commit(repo, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")


def _cites(files: dict[str, str]) -> str:
    return "".join(f"- [ ] x ({name}:{number})\n" for name, text in files.items()
                   for number, line in enumerate(text.splitlines(), 1) if "TODO" in line)


def test_protected_paths_are_never_rewritten(repo):
    _commit(repo, {**PROTECTED, "app.py": "x = 1  # TODO: cited\n"})
    left: dict[str, str] = {}
    assert remove_absorbed(repo, _cites(PROTECTED) + "- [ ] y (app.py:1)\n", left=left) == ["app.py:1"]
    assert set(left) == set(PROTECTED) and all("protected" in why for why in left.values())
    for name, text in PROTECTED.items():
        assert (repo / name).read_text() == text
    assert git(repo, "status", "--porcelain") == " M app.py\n"


# (file, its text, the file after the cut, or "same": untouched)
SURGERY = [
    ("a.py", "x = '-- ; *'  # TODO: cut\n", "x = '-- ; *'\n"),
    ("a.py", 's = """\n# TODO: inside a string\n"""\n', "same"),  # line 2 is a string's content
    ("a.sql", "select 1; -- TODO: cut\n", "select 1;\n"),
    ("a.sql", "select '-- TODO: a value';\n", "same"),
    ("a.js", "const a = 1; // TODO: cut\n", "const a = 1;\n"),
    ("a.js", "const u = 'http://x'; // TODO: cut\n", "const u = 'http://x';\n"),
    ("a.js", "const r = /\\/\\//g; // TODO: regex first\n", "same"),
    ("a.js", "const t = `\n// TODO: template text\n`;\n", "same"),
    ("a.c", "/* TODO: cut */\nint x;\n", "int x;\n"),
    ("a.c", "int a; /* TODO: x */ int b;\n", "same"),
    ("a.sh", "echo ${#x} a#b # TODO: cut\n", "echo ${#x} a#b\n"),
    ("a.sh", "cat <<EOF\n# TODO: heredoc text\nEOF\n", "same"),
    ("a.ini", "key = value ; TODO: a value\n", "same"),
    ("a.yaml", "run: |\n  # TODO: script text\n", "same"),
    ("Dockerfile", "RUN make # TODO: not a comment here\n", "same"),
    ("notes.txt", "# TODO: an unknown language\n", "same"),
    ("a.lua", "x = 1 -- TODO: cut\n", "x = 1\n"),
    ("a.md", "text\n<!-- TODO: cut -->\n", "text\n"),
]


@pytest.mark.parametrize("name,text,after", SURGERY)
def test_a_marker_is_cut_only_from_a_comment_gtd_can_place(repo, name, text, after):
    _commit(repo, {name: text})
    number = next(i for i, line in enumerate(text.splitlines(), 1) if "TODO" in line)
    removed = remove_absorbed(repo, f"- [ ] x ({name}:{number})\n")
    if after == "same":
        assert removed == [] and (repo / name).read_text() == text
    else:
        assert removed == [f"{name}:{number}"]
        assert (repo / name).read_text() == after


def test_a_file_changed_in_this_step_is_left_alone(repo):
    _commit(repo, {"app.py": "x = 1  # TODO: cited\n", "lib.py": "y = 2  # TODO: cited\n"})
    (repo / "lib.py").write_text("y = 3  # TODO: cited\n")  # the agent (or the person) changed it meanwhile
    (repo / "new.py").write_text("# TODO: untracked\n")  # nobody's blob at the step's start
    left: dict[str, str] = {}
    plan = "- [ ] x (app.py:1, lib.py:1, new.py:1)\n"
    git(repo, "add", "-N", "new.py")  # git grep sees it
    assert remove_absorbed(repo, plan, left=left) == ["app.py:1"]
    assert (repo / "lib.py").read_text() == "y = 3  # TODO: cited\n"
    assert (repo / "new.py").read_text() == "# TODO: untracked\n"
    assert set(left) == {"lib.py", "new.py"} and "changed since the step started" in left["lib.py"]


def test_comment_places_per_language():
    assert comments("a.py", "a = '#'  # c\n") == {1: (9, None)}
    assert comments("a.rs", "let c = '\"'; // x\nlet s = \"// y\";\n") == {}  # a quote char gtd cannot follow
    assert comments("x.unknown", "# a\n") == {}
    assert comments("a.go", "s := `\n// x\n` // y\n") == {3: (2, None)}
