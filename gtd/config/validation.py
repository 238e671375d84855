"""Validate one layer's raw dict against the schema, turning pydantic errors into ConfigError."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from gtd.config.schema import LEGACY_KEYS, GtdConfig
from gtd.errors import ConfigError


def strip_legacy_keys(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], list[str]]:
    """Removed keys are accepted and ignored with a warning, and the original TypeScript gtd's keys
    are translated (gtd.config.original), so old files keep working."""
    from gtd.config.original import translate

    kept, warnings = translate(dict(raw), source)
    for key, why in LEGACY_KEYS.items():
        if key in kept:
            del kept[key]
            warnings.append(f"{source}: ignoring removed key '{key}': {why}")
    return kept, warnings


def _dotted(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


def validate_layer(raw: dict[str, Any], source: str) -> dict[str, Any]:
    """Validate a layer on its own and return it in canonical camelCase, only the keys it sets."""
    try:
        model = GtdConfig.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        key = _dotted(first["loc"])
        reason = _reason(first)
        if len(errors) > 1:
            others = "; ".join(f"{_dotted(e['loc'])}: {_reason(e)}" for e in errors[1:])
            reason = f"{reason} (also: {others})"
        raise ConfigError(source, key, reason) from None
    return model.model_dump(by_alias=True, exclude_unset=True, mode="json")


def _reason(error: dict) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown key"
    message = error["msg"]
    if "input" in error and error["type"] not in ("missing",):
        message += f" (got {error['input']!r})"
    return message
