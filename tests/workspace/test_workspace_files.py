"""gtd.workspace_files on a real file system: what it refuses, and that it never follows a link."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gtd import workspace_files as wf
from gtd.workspace_files import UnsafeWorkspacePath


@pytest.fixture
def ws(tmp_path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.md").write_text("hello\n")
    return root


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "secret"
    path.mkdir()
    (path / "key").write_text("PRIVATE\n")
    return path


def test_reads_regular_files_and_says_when_they_are_missing(ws):
    assert wf.read_text(ws, "docs/a.md") == "hello\n"
    assert wf.read_text(ws, ws / "docs" / "a.md") == "hello\n"  # absolute under the root
    assert wf.read_text(ws, "docs/missing.md") is None
    assert wf.read_text(ws, "nowhere/missing.md") is None
    assert wf.read_text(ws, "docs/a.md/under-a-file") is None
    assert wf.is_file(ws, "docs/a.md") and not wf.is_file(ws, "docs/b.md")


@pytest.mark.parametrize("name", ["link.md", "docs/link.md"])
def test_a_symlinked_file_is_refused_with_its_name_never_its_content(ws, secret, name):
    (ws / name).symlink_to(secret / "key")
    for call in (lambda: wf.read_text(ws, name), lambda: wf.is_file(ws, name),
                 lambda: wf.write_text(ws, name, "x"), lambda: wf.append_text(ws, name, "x")):
        with pytest.raises(UnsafeWorkspacePath) as caught:
            call()
        assert str(caught.value) == f"{name} is a symlink; gtd never follows symlinks in the workspace (replace it with a regular file)"
    assert (secret / "key").read_text() == "PRIVATE\n"


def test_a_symlinked_parent_directory_is_refused(ws, secret):
    (ws / "docs" / "out").symlink_to(secret)
    for call in (lambda: wf.read_text(ws, "docs/out/key"), lambda: wf.write_text(ws, "docs/out/new", "x"),
                 lambda: wf.make_dirs(ws, "docs/out/a/b"), lambda: wf.create_file(ws, "docs/out/f"),
                 lambda: wf.exists(ws, "docs/out/key"), lambda: wf.remove(ws, "docs/out/key")):
        with pytest.raises(UnsafeWorkspacePath, match=r"^docs/out is a symlink; gtd never follows symlinks"):
            call()
    assert sorted(os.listdir(secret)) == ["key"]


def test_a_dangling_symlink_is_not_created_through(ws, tmp_path):
    (ws / "TODO.md").symlink_to(tmp_path / "created-elsewhere")
    with pytest.raises(UnsafeWorkspacePath, match="is a symlink"):
        wf.write_text(ws, "TODO.md", "x")
    (ws / "build").symlink_to(tmp_path / "dir-elsewhere")
    with pytest.raises(UnsafeWorkspacePath, match="is a symlink"):
        wf.make_dirs(ws, "build/out")
    assert not (tmp_path / "created-elsewhere").exists() and not (tmp_path / "dir-elsewhere").exists()


def test_a_fifo_is_refused_without_blocking(ws):
    os.mkfifo(ws / "TODO.md")
    done = threading.Event()

    def read():
        with pytest.raises(UnsafeWorkspacePath, match="^TODO.md is a FIFO; gtd only reads and writes regular files"):
            wf.read_text(ws, "TODO.md")
        done.set()

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(30)  # a daemon thread: a regression that blocks fails here instead of hanging the suite
    assert done.is_set(), "reading a FIFO blocked"


def test_directories_and_devices_are_refused(ws):
    with pytest.raises(UnsafeWorkspacePath, match="^docs is a directory"):
        wf.read_text(ws, "docs")
    with pytest.raises(UnsafeWorkspacePath, match="outside the workspace"):
        wf.read_text(ws, "/dev/zero")


def test_reads_are_capped(ws):
    (ws / "big.md").write_bytes(b"x" * 101)
    assert wf.read_bytes(ws, "big.md", limit=101) == b"x" * 101
    with pytest.raises(UnsafeWorkspacePath, match="^big.md is larger than 100 bytes"):
        wf.read_bytes(ws, "big.md", limit=100)


def test_dotdot_and_outside_paths_are_refused(ws):
    for bad in ("../secret/key", "docs/../../secret/key", "/etc/passwd"):
        with pytest.raises(UnsafeWorkspacePath):
            wf.read_text(ws, bad)


def test_writes_are_atomic_keep_the_mode_and_leave_no_temp_file(ws):
    target = ws / "docs" / "a.md"
    target.chmod(0o600)
    inode = target.stat().st_ino
    wf.write_text(ws, "docs/a.md", "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_ino != inode  # replaced by rename, never written in place (hard links keep the old)
    assert oct(target.stat().st_mode & 0o777) == oct(0o600)
    wf.append_text(ws, "docs/a.md", "more\n")
    assert target.read_text() == "new\nmore\n"
    assert sorted(os.listdir(ws / "docs")) == ["a.md"]


def test_remove_removes_a_symlink_itself_never_its_target(ws, secret):
    (ws / "TODO.md").symlink_to(secret / "key")
    assert wf.remove(ws, "TODO.md") is True
    assert (secret / "key").read_text() == "PRIVATE\n"
    assert wf.remove(ws, "TODO.md") is False


# -- escalated paths ------------------------------------------------------------------------------

def test_resolve_write_target_returns_the_real_place(ws, tmp_path):
    assert wf.resolve_write_target(ws, "docs/new.md") == ws / "docs" / "new.md"
    assert wf.resolve_write_target(ws, str(ws / "docs" / "x" / ".." / "new.md")) == ws / "docs" / "new.md"
    outside = tmp_path / "cache"
    assert wf.resolve_write_target(ws, str(outside / "f")) == outside / "f"


@pytest.mark.parametrize("raw", ["../secret/key", "docs/../../secret/key", "{ws}/../secret/key", "{ws}/docs/../../x"])
def test_resolve_write_target_refuses_dotdot_out_of_the_workspace(ws, raw):
    with pytest.raises(UnsafeWorkspacePath, match="leaves the workspace through '..'"):
        wf.resolve_write_target(ws, raw.format(ws=ws))


@pytest.mark.parametrize("raw", ["link/key", "{ws}/link/new/file", "docs/file-link"])
def test_resolve_write_target_refuses_symlinks_inside_the_workspace(ws, secret, raw):
    (ws / "link").symlink_to(secret)
    (ws / "docs" / "file-link").symlink_to(secret / "key")
    with pytest.raises(UnsafeWorkspacePath, match="goes through the symlink .* inside the workspace"):
        wf.resolve_write_target(ws, raw.format(ws=ws))


def test_create_resolved_makes_files_and_directories_without_following_links(ws, tmp_path):
    wf.create_resolved(ws / "a" / "b", directory=True)
    wf.create_resolved(ws / "a" / "b" / "f.txt", directory=False)
    assert (ws / "a" / "b" / "f.txt").is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws / "a" / "c").symlink_to(elsewhere)  # planted between the decision and the creation
    with pytest.raises(UnsafeWorkspacePath):
        wf.create_resolved(ws / "a" / "c" / "d", directory=True)
    assert os.listdir(elsewhere) == []


def test_names_in_lists_the_root_without_opening_or_following_anything(ws, secret):
    """The config loader asks for ~20 candidate files: the names listed once, a name not there is absent, and
    what is there (a symlink too) is still read through read_bytes, which refuses a link."""
    (ws / "package.json").write_text("{}")
    os.symlink(secret / "key", ws / ".gtdrc.json")
    assert wf.names_in(ws) == {"docs", "package.json", ".gtdrc.json"}
    assert wf.names_in(ws / "absent") is None


def test_names_in_a_subdir_never_pass_a_symlink_on_the_way(ws, secret):
    """testcmd lists a project venv's lib/ for pytest: a venv (or lib) that is a link out of the workspace is
    not the project's own and is not listed."""
    (ws / "venv" / "lib" / "python3.11").mkdir(parents=True)
    assert wf.names_in(ws, "venv/lib") == {"python3.11"}
    (secret / "lib").mkdir()
    (secret / "lib" / "python3.12").mkdir()
    os.symlink(secret, ws / ".venv")
    assert wf.names_in(ws, ".venv/lib") is None
    assert wf.names_in(ws, "../x") is None


def test_the_config_loader_still_refuses_a_symlinked_project_config_it_found_listed(ws, secret):
    from gtd.config.loader import _ProjectFiles

    os.symlink(secret / "key", ws / ".gtdrc.json")
    (ws / "gtd.config.json").write_text('{"provider": "scripted"}')
    files = _ProjectFiles(ws)
    assert files.content(".gtdrc.yaml") is None  # not listed: absent, nothing opened
    assert files.content("gtd.config.json") == b'{"provider": "scripted"}'
    with pytest.raises(UnsafeWorkspacePath):
        files.content(".gtdrc.json")


def test_the_config_loader_finds_a_project_config_listed_in_another_case(ws, monkeypatch):
    """On a case-insensitive filesystem (macOS) a `.GTDRC.json` the person created is read as `.gtdrc.json`;
    the listing shows the name as created, so a candidate is absent only when no case of it is listed. (This
    machine's filesystem is case-sensitive: the listing such a filesystem gives is stood in for.)"""
    from gtd.config.loader import _ProjectFiles

    (ws / ".gtdrc.json").write_text('{"provider": "scripted"}')
    monkeypatch.setattr(wf, "names_in", lambda root, path="": frozenset({"docs", ".GTDRC.json"}))
    files = _ProjectFiles(ws)
    assert files.content(".gtdrc.json") == b'{"provider": "scripted"}'
    assert files.content(".gtdrc.yaml") is None  # still absent without opening: no case of it listed
