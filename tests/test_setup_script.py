"""scripts/setup names as missing only what is missing, for any user: a developer who is not root has no
/sbin on PATH, where `ldconfig` is."""

from __future__ import annotations

import ctypes.util
import subprocess
from pathlib import Path

import pytest

SETUP = Path(__file__).resolve().parents[1] / "scripts" / "setup"


@pytest.mark.skipif(ctypes.util.find_library("seccomp") is None, reason="needs libseccomp installed")
def test_an_installed_libseccomp_is_not_named_missing_without_sbin_on_path():
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/nonexistent"}  # Debian's PATH for a user
    ran = subprocess.run([str(SETUP), "--missing"], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "libseccomp2" not in ran.stdout.split(), ran.stdout
