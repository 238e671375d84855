"""Config writes: atomic, format-preserving, validated, and safe with two writers at once."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from gtd.config.loader import load_config
from gtd.config.writer import append_unique, edit_config_file, remove_value, set_key
from gtd.errors import ConfigError


def test_json_keeps_order_indent_and_unrelated_keys(tmp_path):
    path = tmp_path / ".gtdrc.json"
    path.write_text('{\n    "testCommand": "make test",\n    "provider": "pi",\n    "$schema": "./schema.json"\n}\n')
    edit_config_file(path, lambda doc: append_unique(doc, "sandbox.levels.readwrite.allowDomains", "pkg.test:443"))
    text = path.read_text()
    data = json.loads(text)
    assert list(data) == ["testCommand", "provider", "$schema", "sandbox"]
    assert data["sandbox"]["levels"]["readwrite"]["allowDomains"] == ["pkg.test:443"]
    assert text.startswith('{\n    "testCommand"')  # 4-space indent kept


def test_toml_keeps_comments(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('# my settings\nprovider = "pi"  # the one I like\n\n[models]\nbuild = "fast"\n')
    edit_config_file(path, lambda doc: set_key(doc, "sandbox.phases.build", "network"))
    edit_config_file(path, lambda doc: append_unique(doc, "sandbox.levels.network.allowDomains", "x.test:443"))
    text = path.read_text()
    assert text.startswith('# my settings\nprovider = "pi"  # the one I like\n')
    assert 'build = "fast"' in text
    import tomllib

    data = tomllib.loads(text)
    assert data["sandbox"]["phases"]["build"] == "network"
    assert data["sandbox"]["levels"]["network"]["allowDomains"] == ["x.test:443"]


def test_append_is_idempotent_and_remove_tightens(tmp_path):
    path = tmp_path / ".gtdrc.json"
    for _ in range(2):
        edit_config_file(path, lambda doc: append_unique(doc, "sandbox.levels.network.allowDomains", "a.test"))
    assert json.loads(path.read_text())["sandbox"]["levels"]["network"]["allowDomains"] == ["a.test"]
    edit_config_file(path, lambda doc: remove_value(doc, "sandbox.levels.network.allowDomains", "a.test"))
    assert json.loads(path.read_text())["sandbox"]["levels"]["network"]["allowDomains"] == []


def test_invalid_result_writes_nothing(tmp_path):
    path = tmp_path / ".gtdrc.json"
    original = '{"provider": "pi"}\n'
    path.write_text(original)
    with pytest.raises(ConfigError) as caught:
        edit_config_file(path, lambda doc: set_key(doc, "sandbox.phases.build", "everything"))
    assert caught.value.key == "sandbox.phases.build"
    assert path.read_text() == original
    assert [p.name for p in tmp_path.iterdir()] == [".gtdrc.json"]  # no temp file left behind


def test_a_broken_file_is_not_overwritten(tmp_path):
    path = tmp_path / ".gtdrc.json"
    path.write_text('{"provider": ')
    with pytest.raises(ConfigError):
        edit_config_file(path, lambda doc: set_key(doc, "provider", "pi"))
    assert path.read_text() == '{"provider": '


def test_file_mode_is_kept(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{}")
    os.chmod(path, 0o600)
    edit_config_file(path, lambda doc: set_key(doc, "provider", "pi"))
    assert (path.stat().st_mode & 0o777) == 0o600


def _append_many(path: str, prefix: str, count: int) -> None:
    for index in range(count):
        edit_config_file(Path(path), lambda doc, i=index: append_unique(doc, "sandbox.levels.network.allowDomains",
                                                                         f"{prefix}{i}.test:443"))


@pytest.mark.parametrize("name", [".gtdrc.json", "config.toml"])
def test_two_processes_writing_at_once_lose_nothing(tmp_path, name):
    path = tmp_path / name
    path.write_text('{"provider": "pi"}\n' if name.endswith(".json") else 'provider = "pi" # keep me\n')
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(path), prefix, 15)) for prefix in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    if name.endswith(".toml"):
        import tomllib

        data = tomllib.loads(path.read_text())
        assert "# keep me" in path.read_text()
    else:
        data = json.loads(path.read_text())
    domains = data["sandbox"]["levels"]["network"]["allowDomains"]
    assert sorted(domains) == sorted([f"{p}{i}.test:443" for p in "ab" for i in range(15)])
    assert data["provider"] == "pi"


def test_written_file_loads_back(repo):
    path = repo / ".gtdrc.json"
    edit_config_file(path, lambda doc: set_key(doc, "sandbox.phases.build", "network"))
    assert load_config(repo).config.sandbox.phases.build.value == "network"
