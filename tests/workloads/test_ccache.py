"""Real ccache + gcc inside the sandbox at readwrite: a compile the person already cached is a hit from
their cache, a second compile of a new file is a hit from the project's own layer, and the person's
ccache dir is never written from inside."""

from __future__ import annotations

import os
import shutil

import pytest

from gtd.config.schema import Level
from registries import tree_state
from workload_support import run

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("ccache") is None
                                 or shutil.which("gcc") is None, reason="needs bwrap, ccache and gcc (scripts/setup)")]

SOURCE = '#include <stdio.h>\nint main(void) { puts("built %s"); return 0; }\n'
# Zero the counters (they live in the cache dir too), compile, link, run, and print the hit counters.
COMPILE = ("ccache -z >/dev/null && ccache gcc -c {name}.c -o {name}.o && gcc {name}.o -o {name} && ./{name}"
           " && ccache --print-stats | grep -E '^(direct_cache_hit|cache_miss)\t'")


@pytest.fixture(autouse=True)
def ccache_env(monkeypatch):
    """The machine's ccache settings stay out: the cache is the default one under the test's HOME."""
    for key in list(os.environ):
        if key.startswith("CCACHE_"):
            monkeypatch.delenv(key)


def source(root, name: str) -> None:
    (root / f"{name}.c").write_text(SOURCE % name)


def counters(out: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


def test_ccache_hits_the_users_cache_and_its_own_writes_stay_in_the_project(sandbox, repo, isolated_home):
    cache = isolated_home / ".cache" / "ccache"
    source(repo, "one")
    outside = run(None, COMPILE.format(name="one"), repo)  # the person's own build fills their cache
    assert outside.returncode == 0, outside.stderr
    assert counters(outside.stdout) == {"direct_cache_hit": 0, "cache_miss": 1}
    before = tree_state(cache)
    assert before

    session = sandbox(Level.READWRITE)
    inside = run(session, COMPILE.format(name="one"), repo)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    assert inside.stdout.startswith("built one\n")
    assert counters(inside.stdout) == {"direct_cache_hit": 1, "cache_miss": 0}

    source(repo, "two")
    first = run(session, COMPILE.format(name="two"), repo)
    second = run(session, f"rm two.o two && {COMPILE.format(name='two')}", repo)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert counters(first.stdout) == {"direct_cache_hit": 0, "cache_miss": 1}
    assert counters(second.stdout) == {"direct_cache_hit": 1, "cache_miss": 0}, "the second compile is a hit"
    assert session.violations == []
    assert tree_state(cache) == before, "the user's ccache dir was written from inside the sandbox"


def test_ccache_with_no_user_cache_leaves_it_empty(sandbox, repo, isolated_home):
    source(repo, "one")
    session = sandbox(Level.READWRITE)
    first = run(session, COMPILE.format(name="one"), repo)
    second = run(session, f"rm one.o one && {COMPILE.format(name='one')}", repo)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert counters(second.stdout) == {"direct_cache_hit": 1, "cache_miss": 0}
    assert tree_state(isolated_home / ".cache" / "ccache") == {}
