"""Red team, stop 32: the write watch under the Landlock backend (landlock_watch.py) asked about paths a
prompt-injected command chose to make gtd's host side hang or follow a link: a FIFO outside the writable
paths, a magic link through /proc/self/fd, a link loop, a path far too long. The command must end at once, gtd
must neither block nor report a path it reached through a magic link, and the real refusal must still be told."""

from __future__ import annotations

import os
import time

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.linux.landlock import abi_version
from sandbox_support import sh

pytestmark = [pytest.mark.landlock,
              pytest.mark.skipif(abi_version() < 4, reason="the Landlock backend needs Landlock ABI 4 (Linux 6.7+)")]

TRAPS = ("exec 7>/dev/null; (echo x > ../outside.fifo) 2>/dev/null; (echo x > /proc/self/fd/7/x) 2>/dev/null; "
         "ln -s loop1 src/loop2; ln -s loop2 src/loop1; (echo x > src/loop1) 2>/dev/null; "
         "(echo x > /$(python3 -c 'print(\"a/\" * 2100)')x) 2>/dev/null; (echo x > /etc/gtd-rt) 2>/dev/null; echo done")


def test_the_landlock_write_watch_neither_hangs_nor_follows_what_the_agent_laid(sandbox, repo):
    (repo / "src").mkdir()
    os.mkfifo(repo.parent / "outside.fifo")
    s = sandbox(Level.READWRITE, config=GtdConfig.model_validate({"sandbox": {"backend": "landlock"}}))
    started = time.monotonic()
    r = sh(s, TRAPS, repo)
    assert r.out == "done\n" and time.monotonic() - started < 10, r.out + r.err
    targets = [v.target for v in s.violations if v.kind == "write"]
    assert "/etc/gtd-rt" in targets, targets  # the watch still works after the traps
    assert not any(t.startswith("/proc") or "loop" in t or "a/a/a/" in t for t in targets), targets
