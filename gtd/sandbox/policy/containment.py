"""Whether one (already resolved or normalised) path is a directory's own path or below it.

A string test on purpose: pathlib's `.parents` and `relative_to` are far too slow for the
policy's many checks, and the paths compared here were resolved before anything is decided.
"""

from __future__ import annotations

import os


def inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """path is root itself or below it."""
    p, r = os.fspath(path), os.fspath(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


def strictly_inside(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """path is below root (not root itself)."""
    p, r = os.fspath(path), os.fspath(root)
    return p != r and p.startswith(r if r.endswith("/") else r + "/")
