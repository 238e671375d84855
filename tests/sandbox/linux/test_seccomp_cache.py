"""The compiled seccomp program is remembered in gtd's state (sandbox/linux/seccomp.py cached_filter):
the same bytes libseccomp makes, without loading libseccomp on every start, and never a damaged one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gtd.paths import user_state_dir
from gtd.sandbox.linux.seccomp import cached_filter, compile_filter

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="seccomp is Linux only")


def _entries():
    return list((user_state_dir() / "cache" / "seccomp").glob("*.bpf"))


def test_the_cached_program_is_the_compiled_one():
    assert cached_filter() == compile_filter()
    assert len(_entries()) == 1
    assert cached_filter() == compile_filter()  # and again, from the cache


def test_a_cached_start_does_not_load_libseccomp():
    cached_filter()
    code = ("import sys\nfrom gtd.sandbox.linux.seccomp import cached_filter\nprogram = cached_filter()\n"
            "print(len(program), 'pyseccomp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(), check=True)
    assert out.stdout.split() == [str(len(compile_filter())), "False"]


def test_a_damaged_entry_is_compiled_again():
    cached_filter()
    (entry,) = _entries()
    entry.write_bytes(b"\x00" * 5)  # not whole sock_filter entries
    assert cached_filter() == compile_filter()
    assert entry.read_bytes() == compile_filter()
