"""The audit log stays bounded under a flood, and nothing it leaves out goes uncounted (issue 22, class 7c).

An agent opening refused connections in a loop grew the log by ~1 MB/s. A repeat of an entry (the same
fields but the time) within the window is counted instead of written, and one entry with the count
closes the window (or the session); past a size the log is rotated, a few older files kept.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time

import pytest
from support import explain, run_gtd

from gtd.audit import MAX_BYTES, AuditLog


def _total(entries: list[dict], **match) -> int:
    """How many times an entry happened: each written entry once, and each count entry its repeats."""
    return sum(e.get("repeated", 1) for e in entries if all(e.get(k) == v for k, v in match.items()))


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_flood_of_refused_connections_is_a_few_entries_with_their_count(repo):
    flood = 300
    result = run_gtd("sandbox", "run", "--level", "readwrite", "--", "sh", "-c",
                     f"for i in $(seq {flood}); do curl -s -o /dev/null https://blocked.example/; done", cwd=repo,
                     timeout=300)
    assert result.returncode != 0 and "blocked.example" in result.stderr, explain(result)
    entries = AuditLog(repo).read()
    assert len(entries) < 12, [e["event"] for e in entries]
    assert _total(entries, event="violation", target="blocked.example:443") == flood
    assert _total(entries, event="escalation_decision", target="blocked.example:443") == flood
    counted = [e for e in entries if e.get("repeated")]
    assert counted and all(e["repeated_from"] <= e["repeated_until"] for e in counted)


def test_repeats_from_many_threads_are_all_counted(repo):
    log = AuditLog(repo, window=60)
    seen: list[dict] = []
    log.listeners.append(seen.append)

    def refuse():
        for _ in range(500):
            log.record("violation", kind="network", target="evil.example:443", detail="not approved")

    threads = [threading.Thread(target=refuse) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(log.read()) == 1  # within the window only the first is written...
    log.flush()
    entries = log.read()
    assert len(entries) == 2 and entries[1]["repeated"] == 3999  # ...and the rest counted at the session's end
    assert _total(entries, event="violation") == 4000
    assert len(seen) == 4000  # the progress view still hears of each one


def test_the_count_is_written_when_the_window_closes(repo):
    log = AuditLog(repo, window=0.2)
    for _ in range(5):
        log.record("violation", kind="network", target="a.example:443")
    log.record("violation", kind="network", target="b.example:443")  # a different target is its own entry
    time.sleep(0.3)
    log.record("run", command="next")  # any later entry closes what ended meanwhile
    events = [(e["event"], e.get("target"), e.get("repeated")) for e in log.read()]
    assert events == [("violation", "a.example:443", None), ("violation", "b.example:443", None),
                      ("violation", "a.example:443", 4), ("run", None, None)]


def test_repeats_not_written_yet_are_counted_at_exit(repo):
    code = ("import sys; from pathlib import Path; from gtd.audit import AuditLog\n"
            "log = AuditLog(Path(sys.argv[1]))\n"
            "for _ in range(50): log.record('violation', kind='network', target='evil.example:443')\n")
    subprocess.run([sys.executable, "-c", code, str(repo)], check=True, timeout=60)
    entries = AuditLog(repo).read()
    assert [e.get("repeated") for e in entries] == [None, 49]


def test_the_log_is_rotated_past_its_size_and_a_few_old_files_kept(repo):
    assert MAX_BYTES <= 16 * 1024 * 1024
    log = AuditLog(repo, max_bytes=4096, keep=2)
    for number in range(2000):  # all different: nothing to collapse, only the size bounds it
        log.record("violation", kind="network", target=f"host{number}.example:443")
    files = log.files()
    assert [p.name for p in files] == ["audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]
    assert all(p.stat().st_size <= 4096 + 200 for p in files)
    entries = log.read()
    numbers = [int(e["target"][4:].split(".")[0]) for e in entries]
    assert numbers == sorted(numbers) and numbers[-1] == 1999  # the newest kept, oldest first
    assert not log.path.with_name("audit.jsonl.3").exists()
