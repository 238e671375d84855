"""A write outside the phase's boundary, decided in a real terminal: the agent is stopped, the person
decides, and the phase continues at the approved boundary (scripted agent, real sandbox, real CLI).

The plan phase runs at readonly: only TODO.md is writable. The scripted agent writes the plan, then
a design note outside it. Its resume turn (played only when the prompt says it was stopped by the
sandbox) writes the note again, so the note exists only if the agent really was resumed after an approval.
"""

from __future__ import annotations

import json
import shutil

import pytest
import tomlkit

from escalation_support import finish
from gtd.audit import AuditLog
from gtd.paths import user_config_file
from support import configure_scripted, git

pytestmark = [pytest.mark.bwrap, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

PLAN = "# Counter\n\n## Action items\n- [ ] Add count.py with add(a, b)\n  - Tests: test_count.py\n\n" \
       "## Open questions\n\n## Learnings\n"
RESUMED = "You were stopped because the sandbox refused"
NOTE = "# Design (written after the approval)\n"


def _setup(repo, note="notes/design.md"):
    script = {"plan": [
        {"when": RESUMED, "actions": [{"write": {"path": note, "content": NOTE}}]},
        {"actions": [{"write": {"path": "TODO.md", "content": PLAN}},
                     {"write": {"path": note, "content": "# Design (first try)\n"}}]},
    ]}
    configure_scripted(repo, script)
    return (repo / ".gtdrc.json").read_text()


def _plan_and_answer(spawn_gtd, repo, answer, *, target, rule):
    """Run `gtd plan` in a terminal; the request names the refused path and the project rule."""
    child = spawn_gtd("plan", cwd=repo, timeout=120)
    child.expect("The sandbox blocked the agent")
    child.expect(f"write {repo / target} \\(plan phase, level readonly\\)")
    child.expect(f"sandbox.levels.readonly.writablePaths \\+= '{rule}'")
    child.expect("Decision \\[o/p/u/d\\]")
    child.sendline(answer)
    return finish(child)


def _decisions(repo):
    return [(e["decision"], e["decided_by"]) for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]


def _agent_runs(repo):
    return [e for e in AuditLog(repo).read() if e["event"] == "agent_run"]


def test_once_resumes_the_agent_which_writes_and_the_plan_lands_with_nothing_saved(repo, spawn_gtd):
    config = _setup(repo)
    # making notes/ is what the sandbox refused: the request is for that directory, not all of the repo
    output, status = _plan_and_answer(spawn_gtd, repo, "o", target="notes", rule="notes")
    assert status == 0, output
    assert (repo / "notes" / "design.md").read_text() == NOTE  # only the resume turn writes this content
    assert (repo / ".gtdrc.json").read_text() == config and not user_config_file().exists()
    assert git(repo, "log", "-1", "--format=%s").strip() == "📝 plan: Counter"
    assert "🔐" not in git(repo, "log", "--format=%s")
    runs = _agent_runs(repo)
    assert len(runs) == 2 and runs[1].get("resume") and runs[1]["level"] == "readonly"
    assert _decisions(repo) == [("once", "user")]


def test_once_for_a_new_file_lets_the_agent_create_that_file(repo, spawn_gtd):
    """A refused new file is approved as that file; it must not turn into a directory of that name."""
    _setup(repo, note="DESIGN.md")
    output, status = _plan_and_answer(spawn_gtd, repo, "o", target="DESIGN.md", rule="DESIGN.md")
    assert status == 0, output
    assert (repo / "DESIGN.md").is_file() and (repo / "DESIGN.md").read_text() == NOTE
    assert "Is a directory" not in output


def test_project_saves_the_rule_commits_it_and_the_agent_resumes(repo, spawn_gtd):
    _setup(repo)
    output, status = _plan_and_answer(spawn_gtd, repo, "p", target="notes", rule="notes")
    assert status == 0, output
    assert (repo / "notes" / "design.md").read_text() == NOTE
    data = json.loads((repo / ".gtdrc.json").read_text())
    assert data["sandbox"]["levels"]["readonly"]["writablePaths"] == ["notes"]
    assert data["provider"] == "scripted"  # the rest of the file is kept
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[:2] == ["📝 plan: Counter", "🔐 gtd: allow writing notes at readonly (approved by user)"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD~1").split() == [".gtdrc.json"]
    assert _decisions(repo) == [("project", "user")]


def test_user_saves_the_exact_path_to_the_user_config(repo, spawn_gtd):
    config = _setup(repo)
    output, status = _plan_and_answer(spawn_gtd, repo, "u", target="notes", rule="notes")
    assert status == 0, output
    assert (repo / "notes" / "design.md").read_text() == NOTE
    saved = tomlkit.parse(user_config_file().read_text()).unwrap()
    assert saved == {"sandbox": {"levels": {"readonly": {"writablePaths": [str((repo / "notes").resolve())]}}}}
    assert (repo / ".gtdrc.json").read_text() == config


def test_deny_writes_nothing_saves_nothing_and_the_plan_still_lands(repo, spawn_gtd):
    config = _setup(repo)
    output, status = _plan_and_answer(spawn_gtd, repo, "d", target="notes", rule="notes")
    assert status == 0, output
    assert not (repo / "notes").exists()
    assert (repo / ".gtdrc.json").read_text() == config and not user_config_file().exists()
    assert git(repo, "log", "-1", "--format=%s").strip() == "📝 plan: Counter"
    assert len(_agent_runs(repo)) == 1  # not resumed
    assert _decisions(repo) == [("deny", "user")]
    violations = [e for e in AuditLog(repo).read() if e["event"] == "violation"]
    assert [v["target"] for v in violations] == [str((repo / "notes").resolve())]


def test_build_test_failure_with_a_network_error_raises_a_domain_request(repo):
    from support import run_gtd

    script = {"plan": [{"actions": [{"write": {"path": "TODO.md", "content": PLAN}}]}],
              "build": [{"actions": [{"write": {"path": "count.py", "content": "def add(a, b):\n    return a + b\n"}}]}]}
    path = repo.parent / "script.json"
    path.write_text(json.dumps(script))
    failing = "echo 'curl: (6) Could not resolve host: downloads.example.com' >&2; exit 1"
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "scripted", "script": str(path), "testCommand": failing}))
    (repo / "TODO.md").write_text("# Counter\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure gtd")
    assert run_gtd("plan", cwd=repo).returncode == 0
    result = run_gtd("build", cwd=repo)  # no terminal: denied, pending, exit 4
    assert result.returncode == 4, result.stderr
    [request] = json.loads(result.stdout)["requests"]
    assert (request["kind"], request["target"], request["phase"], request["level"]) == \
        ("domain", "downloads.example.com:443", "build", "readwrite")
    assert "network error" in request["reason"]
    decided = [(e["target"], e["decided_by"]) for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert decided == [("downloads.example.com:443", "headless deny")]


def test_a_configured_file_that_does_not_exist_yet_is_created_as_a_file(repo):
    """A writable path from config that is missing is not guessed into a directory: the agent's first
    write is refused, the saved rule answers without asking, and gtd creates what the agent was writing."""
    from support import run_gtd

    _setup(repo, note="DESIGN.md")
    user_config_file().parent.mkdir(parents=True, exist_ok=True)
    user_config_file().write_text(f'[sandbox.levels.readonly]\nwritablePaths = ["{repo / "DESIGN.md"}"]\n')
    result = run_gtd("plan", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert (repo / "DESIGN.md").is_file() and (repo / "DESIGN.md").read_text() == NOTE
    assert _decisions(repo) == [("user", "saved rule")]
