"""The plain (off a terminal) and `--json` (JSONL) output of a whole run, as snapshots.

A full plan -> build -> learn run with the scripted agent in the real sandbox, including a refused
write to a git hook. Times, hashes, paths and token counts are normalised; everything else --
which events, in which order, with which fields -- is the documented contract.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from support import explain, git, run_gtd

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = ("# Counter\n\n## Action items\n- [ ] Add count.py\n  - Tests: test_count.py\n\n"
        "## Open questions\n\n## Learnings\n- keep it small\n")
SCRIPT = {
    "plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
    "build": [{"actions": [{"shell": "echo evil > .git/hooks/pre-commit"},
                           {"write": {"path": "count.py", "content": "N = 1\n"}}], "say": "done"}],
    "learn": [{"actions": [{"write": {"path": "AGENTS.md", "content": "# Notes\n- keep it small\n"}}]}],
}


def _normalise(text: str, repo) -> str:
    text = text.replace(str(repo), "<repo>")
    text = re.sub(r"\b[0-9a-f]{40}\b", "<hash>", text)
    text = re.sub(r"\b[0-9a-f]{10}\b", "<hash>", text)
    text = re.sub(r"\b\d\d:\d\d\b", "MM:SS", text)
    text = re.sub(r"\d+(\.\d+)?k? in / \d+(\.\d+)?k? out", "N in / N out", text)
    text = re.sub(r'"(time|seconds|input|output)": [0-9.]+', r'"\1": 0', text)
    return text


@pytest.fixture
def project(repo):
    (repo.parent / "script.json").write_text(json.dumps(SCRIPT))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json"),
                                                  "testCommand": "true"}))
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    return repo


def test_plain_output_off_a_terminal(project, snapshot):
    result = run_gtd("--all", cwd=project)
    assert result.returncode == 0, explain(result)
    assert "\x1b" not in result.stderr and "\r" not in result.stderr  # no control characters off a terminal
    assert _normalise(result.stderr, project) == snapshot


def test_json_event_stream(project, snapshot):
    result = run_gtd("--all", "--json", cwd=project)
    assert result.returncode == 0, explain(result)
    events = [json.loads(line) for line in result.stdout.splitlines()]  # every line is one JSON object
    assert all("event" in e for e in events)
    commits = [e for e in events if e["event"] == "commit"]
    assert [c["hash"] for c in commits] == git(project, "log", "--format=%H", "-4").split()[::-1]
    assert events[-1]["event"] == "run_end" and events[-1]["status"] == "ok"
    assert _normalise(result.stdout, project) == snapshot


def test_json_headless_escalation_ends_with_the_pending_requests(repo):
    script = {"build": [{"actions": [{"shell": "mkdir -p /tmp/outside-$$ && touch newdir/x || mkdir newdir"}]}]}
    (repo.parent / "script.json").write_text(json.dumps(script))
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(repo.parent / "script.json"),
                                                  "sandbox": {"phases": {"build": "readonly"}}}))
    (repo / "TODO.md").write_text(PLAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a plan")
    result = run_gtd("build", "--json", cwd=repo)
    assert result.returncode == 4, explain(result)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events if e["event"] in ("escalation", "decision", "run_end")] == \
        ["escalation", "decision", "run_end"]
    end = events[-1]
    assert end["status"] == "escalation_pending" and end["exit_code"] == 4
    assert end["requests"][0]["target"] == str(repo / "newdir")
