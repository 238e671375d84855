"""gitguard.work_tree_dirs: the one walk of the work tree (protected paths at start, planted git metadata
after the last command). It must visit exactly the directories os.walk visits when it is kept out of
`.git`, bare git dirs and symlinks, in the same order, and see a `.git` entry of every type, a directory
git takes for a bare repository, and one it cannot list."""

from __future__ import annotations

import os

from gtd.sandbox.host.gitguard import BARE, DOT_GIT, UNREADABLE, work_tree_dirs


def _os_walk(top):
    for dirpath, dirnames, filenames in os.walk(top):
        bare = {"HEAD", "objects", "refs"} <= set(dirnames + filenames) and dirpath != str(top)
        yield dirpath, DOT_GIT if ".git" in dirnames or ".git" in filenames else BARE if bare else None
        dirnames[:] = [] if bare else [d for d in dirnames if d != ".git" and not os.path.islink(os.path.join(dirpath, d))]


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
    for d in ("bare/objects/pack", "bare/refs/heads"):  # a bare repository: reported, not walked into
        (top / d).mkdir(parents=True)
    (top / "bare/HEAD").write_text("ref: refs/heads/main\n")
    walked = list(work_tree_dirs(top))
    assert walked == list(_os_walk(top))
    has_git = {os.path.relpath(d, top) for d, found in walked if found == DOT_GIT}
    assert has_git == {"a", "f", "s", "p", "e", "node_modules/x"}
    assert {os.path.relpath(d, top) for d, found in walked if found == BARE} == {"bare"}
    assert not any(".git" in d.split(os.sep) or "link-to-a" in d for d, _ in walked)


def test_an_unreadable_directory_is_reported_not_walked(tmp_path):
    top = tmp_path / "ws"
    (top / "locked/inner").mkdir(parents=True)
    (top / "open").mkdir()
    os.chmod(top / "locked", 0)
    try:
        readable = os.access(top / "locked", os.R_OK)  # root reads it anyway
        expected = [(str(top), None), (str(top / "locked"), None if readable else UNREADABLE)]
        expected += [(str(top / "locked/inner"), None)] if readable else []
        assert list(work_tree_dirs(top)) == expected + [(str(top / "open"), None)]
    finally:
        os.chmod(top / "locked", 0o755)
