"""One `git diff` for all the person's changed files (what `gtd status` and every run classify) gives
each file exactly the patch a diff of that file alone gives: no header parsing that file names or
file content could mislead."""

from __future__ import annotations

import os
import subprocess

from gtd.workflow import git as gitops
from gtd.workflow.steps import classify_human_edits
from support import git


def alone(repo, path: str) -> str:
    """The patch of one file from a git run of its own (what gtd ran per file before), byte for byte."""
    return subprocess.run(["git", "--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", "--no-textconv",
                           "HEAD", "--", path], cwd=repo, capture_output=True).stdout.decode("utf-8", "surrogateescape")


def test_each_file_gets_the_patch_a_diff_of_it_alone_gives(repo):
    names = ["plain.py", "with space.py", "x b/x.py", "star*.py", "naïve.py", 'quote".py', "back\\slash.py",
             "deleted.py", "mode.sh", "link.py", "binary.bin", "crlf.txt", "tricky.py", "unchanged.py"]
    (repo / "x b").mkdir()
    for name in names:
        (repo / name).write_bytes(b"".join(b"line %d\n" % i for i in range(20)))
    (repo / "starX.py").write_text("another file a glob would match\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    for name in names[:4] + names[4:7] + ["tricky.py"]:
        with open(repo / name, "a") as out:
            out.write("# TODO: more\n")
    (repo / "starX.py").write_text("changed too, but not asked for\n")
    (repo / "deleted.py").unlink()
    os.chmod(repo / "mode.sh", 0o755)
    (repo / "link.py").unlink()
    os.symlink("plain.py", repo / "link.py")  # a type change: two parts under one header
    (repo / "binary.bin").write_bytes(b"\0\1\2" * 50)
    (repo / "crlf.txt").write_bytes(b"line 0\r\nline 1\r\n")
    # content that would read as the next file's header if a carriage return ended a line
    (repo / "tricky.py").write_bytes(b"line 0\n+x\rdiff --git a/plain.py b/plain.py\n@@ -1 +1 @@\n+# TODO: forged\n")
    diffs = gitops.diffs_from_head(repo, names)
    for name in names:
        assert diffs.get(name, "") == alone(repo, name), name
    assert "starX" not in diffs["star*.py"] and "unchanged.py" not in diffs
    assert "forged" not in diffs["plain.py"]


def test_classification_reads_the_same_patches(repo):
    (repo / "a.py").write_text("".join(f"line {i}\n" for i in range(30)))
    (repo / "b.py").write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "files")
    lines = [f"line {i}\n" for i in range(30)]
    lines[1] = "line 1 fixed\n"
    lines[25] = "line 25\n# fixme: feedback\n"
    (repo / "a.py").write_text("".join(lines))
    (repo / "b.py").write_text("two\n")
    edits = classify_human_edits(repo)
    assert edits is not None
    assert edits.fix_paths == ["b.py", "a.py"] and edits.feedback_paths == ["a.py"]
