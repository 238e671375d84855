"""A path the agent names that gtd may not resolve is refused, not a crash (issue 22, class 7a).

`/proc/1/root/...` is a link only pid 1's owner (with ptrace rights over it) may read: realpath raises
PermissionError for anyone else. An agent error naming such a path reached realpath on the host while
gtd turned refused writes into requests, and gtd died with a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from support import configure_scripted, explain

from gtd.workspace_files import UnsafeWorkspacePath, resolve_write_target

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: test_count.py\n\n" \
       "## Open questions\n\n## Learnings\n"
HIDDEN = "/proc/1/root/etc/gtd-probe"


def without_ptrace() -> list[str]:
    """A prefix under which /proc/1/root cannot be resolved, as for any user but pid 1's owner: root keeps
    CAP_SYS_PTRACE otherwise, and resolves it."""
    return ["setpriv", "--bounding-set", "-sys_ptrace"] if os.geteuid() == 0 else []


def _cannot_resolve_here() -> bool:
    probe = subprocess.run([*without_ptrace(), sys.executable, "-c", f"import os; os.path.realpath({HIDDEN!r})"],
                           capture_output=True)
    return probe.returncode != 0


def test_an_agent_error_naming_proc_1_root_is_a_refusal_not_a_traceback(repo):
    if not _cannot_resolve_here():
        pytest.skip("this machine lets the test resolve /proc/1/root")
    script = {"plan": [{"actions": [
        {"write": {"path": "TODO.md", "content": PLAN}},
        {"shell": f"echo \"touch: cannot touch '{HIDDEN}': Read-only file system\" >&2; exit 1"},
        {"write": {"path": "/proc/1/root/tmp/gtd-probe", "content": "x"}},
        {"shell": "ln -s /proc/1/root/etc/passwd leak 2>/dev/null || true"},  # refused at readonly: its error hidden (a shown one is an escalation)
    ]}]}
    configure_scripted(repo, script)
    result = subprocess.run([*without_ptrace(), sys.executable, "-m", "gtd", "plan", "a counter"], cwd=repo,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=180)
    assert "Traceback" not in result.stderr, explain(result)
    assert f"{HIDDEN}" in result.stderr and "cannot be resolved (Permission denied)" in result.stderr, explain(result)
    assert result.returncode == 0, explain(result)  # the plan itself landed


def test_resolving_an_unresolvable_path_is_a_refusal(repo):
    if not _cannot_resolve_here():
        pytest.skip("this machine lets the test resolve /proc/1/root")
    code = ("import sys; from pathlib import Path; from gtd.workspace_files import UnsafeWorkspacePath, "
            "resolve_write_target\n"
            "try:\n    resolve_write_target(Path(sys.argv[1]), sys.argv[2])\n"
            "except UnsafeWorkspacePath as exc:\n    print('refused:', exc)\n")
    done = subprocess.run([*without_ptrace(), sys.executable, "-c", code, str(repo), HIDDEN],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith(f"refused: {HIDDEN}"), done.stdout + done.stderr
    assert resolve_write_target(repo, "a/b") == repo.resolve() / "a" / "b"  # an ordinary path still resolves
    with pytest.raises(UnsafeWorkspacePath):
        resolve_write_target(repo, "../outside")


def test_a_git_config_include_gtd_cannot_resolve_does_not_stop_the_sandbox_start(repo):
    """An include path in a git config the start reads (to protect what git runs) that leads where gtd may
    not resolve: it stays protected as spelled, and the sandbox still starts."""
    if not _cannot_resolve_here():
        pytest.skip("this machine lets the test resolve /proc/1/root")
    with open(repo / ".git" / "config", "a") as config:
        config.write(f"[include]\n\tpath = {HIDDEN}\n")
    done = subprocess.run([*without_ptrace(), sys.executable, "-m", "gtd", "sandbox", "run", "--level", "readwrite",
                           "--", "true"], cwd=repo, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, explain(done)
