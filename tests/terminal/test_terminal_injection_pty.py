"""Agent-controlled text never reaches the person's terminal as escape sequences or rich markup.

The scripted agent (real sandbox, real CLI on a pty) plants OSC 52 clipboard writes, cursor moves,
a C1 CSI, an OSC 8 hyperlink and rich markup in a tool name, a command, a tool's error output, a
refused file name (so also the approval question, the pending list and the audit log) and its text.
Every one must show up as visible escapes (`\\x1b]52;...`) and literal brackets, never raw.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from support import configure_scripted, explain, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

OSC52 = "\x1b]52;c;T1dORUQ=\x07"  # "OWNED" into the clipboard
CURSOR_UP = "\x1b[99A"  # hides the 99 lines above
C1_CSI = "\x9b98A"  # the same with the one-byte C1 introducer
OSC8 = "\x1b]8;;http://evil.test\x1b\\"  # a hidden hyperlink
MARKUP = "[bold red]RED[/bold red] [link=http://evil.test]click[/link]"
RAW = [OSC52, "\x1b]52;", CURSOR_UP, "\x1b[98A", "\x9b", "\x1b]8;", "\x07"]

PLAN = ("# Counter\n\n## Action items\n- [ ] Add count.py\n  - Tests: test_count.py\n\n"
        "## Open questions\n\n## Learnings\n")
EVIL_NAME = f"notes/{OSC52}{CURSOR_UP}evil.md"


def _setup(repo):
    shell = ("printf \"EROFS: read-only file system, open 'notes/\\033]52;c;T1dORUQ=\\007\\033[99Aevil.md'\\n\"; "
             "printf 'build \\233""98A hidden\\n'; exit 1")
    script = {"plan": [{"actions": [
        {"write": {"path": "TODO.md", "content": PLAN}},
        {"tool": {"name": f"Look{CURSOR_UP}up", "input": {"command": f"echo {OSC52}{MARKUP}"}}},
        {"shell": shell},
    ], "say": f"done {OSC8}here{C1_CSI} {MARKUP}"}]}
    configure_scripted(repo, script)


def _assert_clean(text: str, what: str) -> str:
    """Asserts no raw sequence from the agent is in `text`; returns it without gtd's own colours."""
    for raw in RAW:
        assert raw not in text, f"{what}: raw {raw!r} reached the terminal:\n{text[-3000:]!r}"
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_live_run_and_approval_prompt_show_escapes_visibly(repo, terminal):
    _setup(repo)
    # wide enough that the panel's value column never folds the path (the unprivileged user's tmp path is longer)
    screen = terminal("plan", "-v", cwd=repo, env={"COLUMNS": "240"})
    screen.child.expect("The sandbox blocked the agent")
    screen.child.expect("Decision")
    screen.child.sendline("d")
    status = screen.finish()
    assert status == 0, screen.text
    text = _assert_clean(screen.text, "gtd plan")
    # the person sees that something was there, and where
    assert "\\x1b]52;c;T1dORUQ=\\x07" in text  # the command, the refused path, the prompt
    assert f"write {repo}/notes/\\x1b]52;c;T1dORUQ=\\x07\\x1b[99Aevil.md (plan phase, level readonly)" in text
    assert "Look\\x1b[99Aup" in text  # the tool name
    assert "\\x9b98A" in text  # a C1 control from the command's output
    assert "[bold red]RED[/bold red]" in text and "[link=http://evil.test]click[/link]" in text  # markup shown as text


def test_pending_list_audit_and_approve_show_escapes_visibly(repo, terminal):
    _setup(repo)
    headless = run_gtd("plan", cwd=repo)
    assert headless.returncode == 4, explain(headless)
    for stream, text in (("stdout", headless.stdout), ("stderr", headless.stderr)):
        _assert_clean(text, f"headless {stream}")
    pending = json.loads(headless.stdout)["requests"]
    assert pending[0]["target"] == f"{repo}/{EVIL_NAME}"  # the JSON keeps the exact name, escaped as JSON

    listing = terminal("approve", "--list", cwd=repo)
    assert listing.finish() == 0, listing.text
    assert "notes/\\x1b]52;c;T1dORUQ=\\x07\\x1b[99Aevil.md" in _assert_clean(listing.text, "gtd approve --list")

    audit = terminal("audit", cwd=repo)
    assert audit.finish() == 0, audit.text
    assert "\\x1b]52;c;T1dORUQ=\\x07" in _assert_clean(audit.text, "gtd audit")

    approve = terminal("approve", cwd=repo)
    approve.child.expect("Pending request 1 of 1")
    approve.child.expect("Decision")
    approve.child.sendline("d")
    assert approve.finish() == 0, approve.text
    assert "\\x1b[99Aevil.md" in _assert_clean(approve.text, "gtd approve")
