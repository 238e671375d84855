"""Validate one layer's raw dict against the schema, turning pydantic errors into ConfigError."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ValidationError

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
        return "unknown key" + _known_key_hint(tuple(str(part) for part in error["loc"]))
    message = error["msg"]
    if "input" in error and error["type"] not in ("missing",):
        message += f" (got {error['input']!r})"
    return message


def _key_paths(model: type[BaseModel] = GtdConfig, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path the schema accepts, spelled as in the files (camelCase aliases)."""
    paths = []
    for name, field in model.model_fields.items():
        path = (*prefix, field.alias or name)
        paths.append(path)
        nested = next((t for t in (field.annotation, *get_args(field.annotation))
                       if isinstance(t, type) and issubclass(t, BaseModel)), None)
        if nested is not None:
            paths += _key_paths(nested, path)
    return paths


def _known_key_hint(loc: tuple[str, ...]) -> str:
    """What the person probably meant: a close spelling next to it (`testComand`), the same key where it
    belongs (`allowDomains` at the top: sandbox.levels.<level>.allowDomains), or the keys allowed here."""
    import difflib

    parent, key = loc[:-1], loc[-1]
    paths = _key_paths()
    here = [p[-1] for p in paths if p[:-1] == parent]
    close = difflib.get_close_matches(key, here, n=1, cutoff=0.75)
    if close:
        return f" (did you mean '{'.'.join((*parent, close[0]))}'?)"
    levels = {p[-1] for p in paths if p[:-1] == ("sandbox", "levels")}
    elsewhere = list(dict.fromkeys("in " + ".".join("<level>" if part in levels and p[i - 1:i] == ("levels",) else part
                                                    for i, part in enumerate(p[:-1])) if len(p) > 1 else "at the top level"
                                   for p in paths if p[-1] == key))
    notes = [f"keys here: {', '.join(here)}"] if 0 < len(here) <= 8 else []
    if elsewhere:
        notes.append(f"'{key}' belongs {' or '.join(elsewhere)}")
    return f" ({'; '.join(notes)})" if notes else ""
