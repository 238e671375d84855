"""Model API endpoints: which host:port the sandbox must let each CLI reach.

The endpoint comes from the same env vars the CLIs read (ANTHROPIC_BASE_URL, OPENAI_BASE_URL),
so pointing gtd at another API (a proxy, a gateway, the test suite's fake server) needs no
gtd-specific setting, and the sandbox opens exactly that host.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

ANTHROPIC_DEFAULT = "https://api.anthropic.com"
OPENAI_DEFAULT = "https://api.openai.com/v1"


def host_port(url: str) -> str:
    """'http://127.0.0.1:8080/v1' -> '127.0.0.1:8080'; default ports by scheme."""
    parts = urlsplit(url if "://" in url else f"https://{url}")
    if not parts.hostname:
        raise ValueError(f"not a URL: {url!r}")
    port = parts.port or (80 if parts.scheme == "http" else 443)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}"


def anthropic_base_url() -> str | None:
    return os.environ.get("ANTHROPIC_BASE_URL") or None


def openai_base_url() -> str | None:
    return os.environ.get("OPENAI_BASE_URL") or None


def strip_v1(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def with_v1(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"
