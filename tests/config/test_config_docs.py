"""docs/config.md's key table is generated from the schema (scripts/gen-config-docs) and must match it."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen-config-docs"


def generator():
    loader = importlib.machinery.SourceFileLoader("gen_config_docs", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_config_reference_is_up_to_date_with_the_schema():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr


def test_a_stale_table_is_caught_and_regenerated():
    gen = generator()
    current = gen.DOC.read_text(encoding="utf-8")
    stale = current.replace("| `testRetries` |", "| `testRetriez` |")
    assert stale != current
    assert gen.render(stale) == current  # what --check compares against: the stale row is rewritten


def leaf_keys(schema: dict, node: dict, prefix: str = "") -> set[str]:
    """Every leaf key of `gtd config schema`'s JSON Schema, `<level>` standing for the four levels."""
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    props = node.get("properties")
    if not props or node.get("enum"):
        return {prefix.rstrip(".")}
    if prefix == "sandbox.levels.":
        return {k.replace("readonly.", "<level>.") for k in leaf_keys(schema, props["readonly"], prefix + "readonly.")}
    keys = set()
    for name, sub in props.items():
        keys |= leaf_keys(schema, sub, prefix + name + ".")
    return keys


def test_every_key_of_the_json_schema_is_in_the_reference(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gtd", "config", "schema"], capture_output=True, text=True,
                       cwd=tmp_path, check=True)
    schema = json.loads(r.stdout)
    text = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    levels = r"<readonly\|readwrite\|network\|full>"
    missing = [k for k in sorted(leaf_keys(schema, schema)) if f"`{k.replace('<level>', levels)}`" not in text]
    assert not missing and len(leaf_keys(schema, schema)) > 20, missing
