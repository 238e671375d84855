"""sha256 and a constant-time comparison without loading OpenSSL.

`import hashlib` (and `hmac`, which imports it) loads OpenSSL's libcrypto: ~2.5 ms on the start-up path of
every `gtd sandbox run` (issue 13), while gtd hashes only a few small files and names and compares one
token. The interpreter's built-in sha256 gives the same digests (cache keys and project directory names
stay what they were); `_operator._compare_digest` is the constant-time comparison `hmac.compare_digest`
itself falls back on.
"""

from __future__ import annotations

try:
    from _sha256 import sha256  # CPython up to 3.11
except ImportError:  # pragma: no cover - the running interpreter has one of these three
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        from hashlib import sha256

try:
    from _operator import _compare_digest as compare_digest
except ImportError:  # pragma: no cover
    from hmac import compare_digest

__all__ = ["compare_digest", "sha256"]
