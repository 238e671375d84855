"""Each project has its own agent state (issue 23), with the real CLIs against the fake model server, in the
real sandbox: project A's readonly plan can leave nothing in the places its CLI loads instructions from
(rules, memory, settings, AGENTS.md, ...), and project B's sandbox cannot read A's transcripts."""

from __future__ import annotations

import json
import os
import subprocess
from types import SimpleNamespace

import pytest

from fakemodel.server import say, shell
from gtd.config.schema import Level, Phase
from gtd.providers.agent_dirs import agent_dir, agents_root
from gtd.providers.registry import _load
from gtd.providers.runner import run_agent
from provider_support import request_for

pytestmark = pytest.mark.e2e
TIMEOUTS = SimpleNamespace(inactivity_seconds=90, run_seconds=180)
PLANTED = "PLANTED-INSTRUCTION-FROM-A"
TRANSCRIPT = "A-TRANSCRIPT-MARKER"


def _repo(path):
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    (path / "README.md").write_text("# project\n")
    return path


def _instruction_places(name: str, home) -> list[str]:
    """Where each CLI loads instructions from in its gtd-managed dir (as the shell inside spells them)."""
    if name == "claude":
        slug = "".join(c if c.isalnum() else "-" for c in os.path.realpath(home))
        base = "$CLAUDE_CONFIG_DIR"
        return [f"{base}/rules/planted.md", f"{base}/CLAUDE.md", f"{base}/projects/{slug}/memory/MEMORY.md",
                f"{base}/commands/planted.md", f"{base}/agents/planted.md", f"{base}/settings.json"]
    if name == "pi":
        return ["$PI_CODING_AGENT_DIR/AGENTS.md", "$PI_CODING_AGENT_DIR/SYSTEM.md", "$PI_CODING_AGENT_DIR/settings.json"]
    return ["$XDG_CONFIG_HOME/opencode/AGENTS.md", "$XDG_CONFIG_HOME/opencode/opencode.json"]


def _run(agent, repo, sandbox_session, prompt, *, level, phase, editable=None):
    provider = _load(agent.name)()  # a new provider per run, as gtd makes one
    session = sandbox_session(repo, level=level, phase=phase, needs=provider.sandbox_needs(repo))
    request = request_for(repo, prompt, phase, model=agent.model, editable_paths=editable)
    return run_agent(provider, request, session, timeouts=TIMEOUTS)


def test_a_projects_plan_leaves_nothing_for_the_next_and_its_transcripts_stay_its_own(
        agent, tmp_path, fake_model, sandbox_session):
    repo_a, repo_b = _repo(tmp_path / "alpha"), _repo(tmp_path / "beta")
    places = _instruction_places(agent.name, repo_a)
    plant = "; ".join(f'mkdir -p "$(dirname "{p}")" 2>/dev/null; echo {PLANTED} >> "{p}" && echo wrote {p}'
                      for p in places)
    fake_model.script([shell(plant), say("planned")])
    first = _run(agent, repo_a, sandbox_session, f"Plan it. {TRANSCRIPT}", level=Level.READONLY, phase=Phase.PLAN,
                 editable=["TODO.md"])
    assert first.ok, f"{first.error}\n{first.stderr[-3000:]}"
    outcome = next(e for e in first.events if e.kind.value == "tool_result")
    assert "wrote" not in outcome.text, outcome.text  # every instruction place is read-only inside
    a_dir = agent_dir(agent.name, repo_a)
    written = [p for p in a_dir.rglob("*") if p.is_file() and TRANSCRIPT in p.read_text(errors="replace")]
    if agent.name != "opencode":  # opencode keeps its sessions in a database: the marker is in there too
        assert written, f"{agent.name} kept no transcript of project A in {a_dir}"
    variables = {"$CLAUDE_CONFIG_DIR": a_dir, "$PI_CODING_AGENT_DIR": a_dir, "$XDG_CONFIG_HOME": a_dir / "config"}
    for place in places:
        var, _, rest = place.partition("/")
        host = variables[var] / rest
        assert not host.is_file() or PLANTED not in host.read_text(), host

    fake_model.requests.clear()
    look = (f"grep -rl {TRANSCRIPT} {agents_root()} 2>&1 | head -3; ls {a_dir} 2>&1 | head -3; "
            f"echo looked")
    fake_model.script([shell(look), say("built")])
    second = _run(agent, repo_b, sandbox_session, "Build it.", level=Level.READWRITE, phase=Phase.BUILD)
    assert second.ok, f"{second.error}\n{second.stderr[-3000:]}"
    outcome = next(e for e in second.events if e.kind.value == "tool_result")
    assert "looked" in outcome.text and TRANSCRIPT not in outcome.text.replace(f"grep -rl {TRANSCRIPT}", "")
    assert "No such file or directory" in outcome.text  # A's dir is not there at all inside B's sandbox
    carried = json.dumps([r.body for r in fake_model.main_requests()])
    assert PLANTED not in carried and TRANSCRIPT not in carried.replace(f"grep -rl {TRANSCRIPT}", "")
    assert agent_dir(agent.name, repo_b) != a_dir and agent_dir(agent.name, repo_b).is_dir()
