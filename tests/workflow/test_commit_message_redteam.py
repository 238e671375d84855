"""Red team: gtd writes commit messages from text the agent controls (a TODO item's title in the
🔨 subject, a file name in the 🔧 subject). `git log` prints a message as it is, so a control
sequence there (OSC 52 writes the clipboard) or a raw non-UTF-8 byte (0x9b is CSI) would reach the
person's terminal long after gtd ran: every commit message gtd writes has them made visible."""

from __future__ import annotations

import os
import subprocess

from gtd.workflow import git as gitops

HOSTILE = "Add \x1b]52;c;SGk=\x07 thing \x9b31m " + os.fsdecode(b"n\x9b\xff.txt") + " \u202e"


def _raw_log(repo) -> bytes:
    return subprocess.run(["git", "log", "--format=%B"], cwd=repo, capture_output=True, check=True).stdout


def _assert_clean(raw: bytes) -> None:
    text = raw.decode("utf-8")  # valid UTF-8
    assert not any(c in text for c in "\x1b\x07\x9b\u202e"), text
    assert "Add \\x1b]52;c;SGk=\\x07 thing \\x9b31m n\\udc9b\\udcff.txt \\u202e" in text


def test_commit_all_message(repo):
    (repo / "a.txt").write_text("a\n")
    gitops.commit_all(repo, f"🔨 build: {HOSTILE}\n\nTested with: t")
    _assert_clean(_raw_log(repo))


def test_commit_paths_message(repo):
    (repo / "a.txt").write_text("a\n")
    gitops.commit_paths(repo, ["a.txt"], f"🔧 fix: {HOSTILE}")
    _assert_clean(_raw_log(repo))


def test_commit_file_text_message(repo):
    gitops.commit_file_text(repo, "TODO.md", "# goal\n", f"📝 plan: {HOSTILE}")
    _assert_clean(_raw_log(repo))
