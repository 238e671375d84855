"""The kernel layers under the real workflow: a scripted build agent that plants a set-id file, writes
to a host FIFO outside its writable paths and starts a fork bomb, through the real CLI and sandbox.
The build still lands; nothing reaches the host."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from support import git, run_gtd

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

PLAN = """# Counter

## Action items
- [ ] Add count.py with add(a, b)
  - Tests: test_count.py

## Open questions

## Learnings
"""

TEST_FILE = "import unittest\nfrom count import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"

FORK_BOMB = (
    "import os, time\n"
    "kids = []\n"
    "try:\n"
    "    for _ in range(2000):\n"
    "        pid = os.fork()\n"
    "        if pid == 0:\n"
    "            time.sleep(30); os._exit(0)\n"
    "        kids.append(pid)\n"
    "    result = 'UNBOUNDED'\n"
    "except OSError:\n"
    "    result = f'stopped at {len(kids)}'\n"
    "open('bomb.out', 'w').write(result)\n"
    "for k in kids: os.kill(k, 9)\n"
    "for k in kids: os.waitpid(k, 0)\n"
)


@pytest.fixture
def host_fifo():
    d = Path(tempfile.mkdtemp(prefix="gtd-fifo-", dir="/var/tmp"))  # outside the sandbox's private /tmp
    fifo = d / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    yield fifo, reader
    os.close(reader)
    shutil.rmtree(d, ignore_errors=True)


def test_build_agent_cannot_plant_set_id_files_write_host_fifos_or_fork_without_bound(repo, host_fifo):
    from gtd.sandbox.linux.landlock import abi_version

    fifo, reader = host_fifo
    (repo / "bomb.py").write_text(FORK_BOMB)
    build = {"actions": [
        {"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}},
        {"write": {"path": "test_count.py", "content": TEST_FILE}},
        {"shell": "chmod u+s count.py; chmod g+s test_count.py; install -m 4755 /bin/true suid-true; true"},
        # its error hidden: a refused write shown is an escalation (test_workflow_headless); here the FIFO
        # must stay unwritten and the build go on
        {"shell": f"echo LEAKED 2>/dev/null > {fifo}; true"},
        {"shell": "python3 bomb.py"},
    ]}
    script = repo.parent / "script.json"
    script.write_text(json.dumps({"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}], "build": [build]}))
    (repo / ".gtdrc.json").write_text(json.dumps({
        "provider": "scripted", "script": str(script), "testCommand": "python3 -m unittest -q", "testRetries": 0,
        "sandbox": {"limits": {"processes": 128}},
    }))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    (repo / "TODO.md").write_text("# Counter\n")

    assert run_gtd(cwd=repo).returncode == 0  # plan
    result = run_gtd(cwd=repo)  # build
    assert result.returncode == 0, result.stdout + result.stderr
    assert git(repo, "log", "-1", "--format=%s").startswith("🔨 build:")
    for entry in repo.iterdir():
        assert not os.lstat(entry).st_mode & (stat.S_ISUID | stat.S_ISGID), entry
    if abi_version():
        try:
            assert os.read(reader, 100) == b""
        except BlockingIOError:
            pass  # nothing was written
    from gtd.sandbox.linux.limits import cgroup_support

    if "pids" in cgroup_support() or os.geteuid() != 0:  # host root is exempt from RLIMIT_NPROC
        outcome = (repo / "bomb.out").read_text()
        assert outcome.startswith("stopped at") and int(outcome.split()[-1]) < 128, outcome
