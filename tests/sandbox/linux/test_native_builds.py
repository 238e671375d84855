"""gtd's C builds (sandbox/nativebuild.py) on a toolchain that aligns segments to 64 KiB pages, as
aarch64's linker does by default: the relay library and the launcher come out ~66 KiB (~195 KiB with
separate code segments) instead of ~15 KiB on x86-64, and must still be taken, not refused as too big."""

from __future__ import annotations

import shutil
import stat

import pytest

from gtd.sandbox.linux import nativelaunch
from gtd.sandbox.network import nativerelay

COMPILER = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(COMPILER is None, reason="no C compiler")


@pytest.fixture(params=["noseparate-code", "separate-code"])
def page_aligned_compiler(request, tmp_path, monkeypatch):
    """CC: this machine's compiler linking with 64 KiB pages (aarch64's default)."""
    wrapper = tmp_path / "cc-64k"
    wrapper.write_text(f'#!/bin/sh\nexec {COMPILER} "$@" -Wl,-z,max-page-size=65536 -Wl,-z,{request.param}\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))


def test_the_relay_library_is_built_and_loaded(page_aligned_compiler):
    built = nativerelay.build()
    assert built is not None and built.stat().st_size > 60 * 1024  # the wrapper's flags took effect
    assert nativerelay.load(built) is not None


def test_the_launcher_is_built_and_read(page_aligned_compiler, tmp_path):
    built = nativelaunch.compile_into(tmp_path / "native")
    assert built is not None and built.stat().st_size > 60 * 1024
    assert stat.S_IMODE(built.stat().st_mode) == 0o755
    assert nativelaunch._read(built) == built.read_bytes()
