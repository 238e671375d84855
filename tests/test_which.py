"""gtd.which.which finds what shutil.which finds (gtd's start-up path looks up bwrap, unshare, git and
the agent CLI without importing shutil)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gtd.which import which


def test_which_is_shutils(tmp_path: Path, monkeypatch):
    first, second, empty = tmp_path / "a", tmp_path / "b", tmp_path / "empty"
    for d in (first, second, empty):
        d.mkdir()
    (first / "tool").write_text("#!/bin/sh\n")  # not executable: skipped
    (second / "tool").write_text("#!/bin/sh\n")
    (second / "tool").chmod(0o755)
    (first / "dir-named-tool").mkdir()  # a directory is never the command
    (second / "dir-named-tool").mkdir()
    (second / "only-here").write_text("")
    (second / "only-here").chmod(0o755)
    names = ["tool", "dir-named-tool", "only-here", "missing", "sh", str(second / "tool"), str(first / "tool"),
             "./tool", "a/tool"]
    paths = [f"{first}{os.pathsep}{second}", f"{second}{os.pathsep}{second}", str(empty), "", f"{os.pathsep}{second}",
             os.environ.get("PATH", "")]
    monkeypatch.chdir(tmp_path)
    for name in names:
        for path in paths:
            assert which(name, path) == shutil.which(name, path=path), (name, path)
            monkeypatch.setenv("PATH", path)
            assert which(name) == shutil.which(name), (name, path)
        monkeypatch.delenv("PATH")
        assert which(name) == shutil.which(name), (name, "PATH unset")
