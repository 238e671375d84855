"""How layers combine. Scalars: the higher layer overrides. Objects: merged key by key.
Lists (allow-lists and deny-lists alike): union across layers, order kept, duplicates dropped.
Because deny-lists only ever grow, a deny in any layer wins over an allow in any layer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Any


def merge(lower: dict[str, Any], higher: dict[str, Any]) -> dict[str, Any]:
    result = dict(lower)
    for key, value in higher.items():
        below = result.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            result[key] = merge(below, value)
        elif isinstance(below, list) and isinstance(value, list):
            result[key] = below + [item for item in value if item not in below]
        else:
            result[key] = value
    return result


def leaf_keys(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into dotted keys (lists and scalars are leaves)."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(leaf_keys(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat
