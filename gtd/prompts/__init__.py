"""Prompts are package data (markdown), rendered with `string.Template` ($name placeholders)."""

from __future__ import annotations

from importlib import resources
from string import Template


def render(name: str, **values: object) -> str:
    text = resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    return Template(text).safe_substitute({key: str(value) for key, value in values.items()}).strip() + "\n"
