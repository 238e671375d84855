"""gitguard.work_tree_dirs: the one walk of the work tree (protected paths at start, planted git metadata
after the last command). It must visit exactly the directories os.walk visits when it is kept out of
`.git` and symlinks, in the same order, and see a `.git` entry of every type."""

from __future__ import annotations

import os

from gtd.sandbox.gitguard import work_tree_dirs


def _os_walk(top):
    for dirpath, dirnames, filenames in os.walk(top):
        yield dirpath, ".git" in dirnames or ".git" in filenames
        dirnames[:] = [d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(dirpath, d))]


def test_same_directories_same_order_and_every_kind_of_dot_git(tmp_path):
    top = tmp_path / "ws"
    for d in ("a/b/c", "a/.git/hooks", "z/y", "m/n", "f", "s", "p", "node_modules/x/.git", "e"):
        (top / d).mkdir(parents=True)
    (top / "f/.git").write_text("gitdir: ../a/.git\n")  # a .git file
    os.symlink(top / "a", top / "s/.git")  # a .git symlink to a directory
    os.symlink(top / "nowhere", top / "p/.git")  # a dangling one
    os.mkfifo(top / "e/.git")  # anything at all named .git
    os.symlink(top / "a", top / "link-to-a")  # never followed
    (top / "a/b/file").write_text("x")
    walked = list(work_tree_dirs(top))
    assert walked == list(_os_walk(top))
    has_git = {os.path.relpath(d, top) for d, found in walked if found}
    assert has_git == {"a", "f", "s", "p", "e", "node_modules/x"}
    assert not any(".git" in d.split(os.sep) or "link-to-a" in d for d, _ in walked)


def test_an_unreadable_directory_is_skipped_like_os_walk(tmp_path):
    top = tmp_path / "ws"
    (top / "locked/inner").mkdir(parents=True)
    (top / "open").mkdir()
    os.chmod(top / "locked", 0)
    try:
        assert list(work_tree_dirs(top)) == list(_os_walk(top))
    finally:
        os.chmod(top / "locked", 0o755)
