"""gtd.digest: the built-in sha256 and constant-time comparison gtd uses instead of hashlib/hmac (no
OpenSSL on the start-up path) give exactly what hashlib and hmac give, so cache keys and the per-project
state directories keep their names."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from gtd.digest import compare_digest, sha256
from gtd.paths import project_key


def test_sha256_is_hashlibs():
    for data in (b"", b"abc", bytes(range(256)) * 1000):
        ours = sha256(data)
        ours.update(b"tail")
        theirs = hashlib.sha256(data)
        theirs.update(b"tail")
        assert (ours.hexdigest(), ours.digest()) == (theirs.hexdigest(), theirs.digest())


def test_compare_digest_is_hmacs():
    for a, b in ((b"token", b"token"), (b"token", b"tokem"), (b"token", b"toke"), (b"", b"")):
        assert compare_digest(a, b) is hmac.compare_digest(a, b)


def test_project_key_keeps_its_name(tmp_path: Path):
    resolved = str(tmp_path.resolve())
    assert project_key(tmp_path) == f"{tmp_path.name}-{hashlib.sha256(resolved.encode()).hexdigest()[:16]}"
