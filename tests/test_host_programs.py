"""gtd.host_programs: the programs gtd runs on the host never come from the workspace."""

from __future__ import annotations

from gtd.host_programs import host_program


def _executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_name_with_a_directory_part_is_taken_only_when_absolute_and_outside_the_workspace(tmp_path, monkeypatch):
    """`CC=tools/cc` names a file under the current directory (the workspace the agent writes): refused, as
    an absolute path into the workspace is; an absolute path elsewhere is the person's choice and kept."""
    workspace, elsewhere = tmp_path / "repo", tmp_path / "opt"
    _executable(workspace / "tools" / "cc")
    outside = _executable(elsewhere / "bin" / "cc")
    monkeypatch.chdir(workspace)
    assert host_program("tools/cc", [workspace]) is None
    assert host_program("./tools/cc", [workspace]) is None
    assert host_program(str(workspace / "tools" / "cc"), [workspace]) is None
    (tmp_path / "link").symlink_to(workspace / "tools")  # resolved before it is judged
    assert host_program(str(tmp_path / "link" / "cc"), [workspace]) is None
    assert host_program(str(outside), [workspace]) == str(outside)
