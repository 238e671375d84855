"""Prompts are package data (markdown), rendered with `string.Template` ($name placeholders)."""

from __future__ import annotations

import os
from string import Template

_HERE = os.path.dirname(__file__)  # a directory on disk: gtd is never imported from a zip (sandbox/nativelaunch
# builds its launcher beside its module), so no importlib.resources (~3 ms of imports per phase)


def render(name: str, **values: object) -> str:
    with open(os.path.join(_HERE, f"{name}.md"), encoding="utf-8") as source:
        text = source.read()
    return Template(text).safe_substitute({key: str(value) for key, value in values.items()}).strip() + "\n"
