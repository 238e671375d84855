"""A validated config's values read like the GtdConfig model, without pydantic (the fast paths).

`ConfigView(loaded.values)` answers `view.sandbox.levels.network.allow_domains` from the camelCase
JSON that a validated load produced (config/cache.py stores only those): snake_case attributes,
nested sections as views, `for_level`/`for_phase` as on the models (values as stored: a phase's
level is the string; `Level(...)` takes either). Nothing here validates; building GtdConfig stays
the way to validate.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class ConfigView:
    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]):
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._values[_camel(name)]
        except KeyError:
            raise AttributeError(name) from None
        return ConfigView(value) if isinstance(value, dict) else value

    def for_level(self, level) -> Any:
        return getattr(self, level.value)

    def for_phase(self, phase) -> Any:
        return getattr(self, phase.value)
