"""A package registry refused at readwrite: besides allow/save/deny, the person may run the phase at
network for the rest of the run. Then the network level's other hosts are let through without asking."""

from __future__ import annotations

import pytest

from escalation_support import finish
from gtd.audit import AuditLog
from gtd.paths import user_config_file
from support import serving

pytestmark = pytest.mark.bwrap


@pytest.fixture
def second_server():
    with serving(b"REGISTRY-OK") as port:
        yield port


def _user_config(text: str) -> None:
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _curl(*targets: str) -> list[str]:
    # --noproxy '': through the proxy on purpose (NO_PROXY keeps localhost inside the sandbox).
    script = "; ".join(f"curl --noproxy '' -sS --max-time 30 -w ' HTTP=%{{http_code}}\\n' http://{t}/" for t in targets)
    return ["sandbox", "run", "--phase", "build", "--", "sh", "-c", script]


def test_a_registry_refused_at_readwrite_offers_running_the_phase_at_network(repo, http_server, second_server, spawn_gtd):
    # Loopback needs its IP literal allowed; the names are registries of the network level only.
    _user_config(f'[sandbox.levels.readwrite]\nallowDomains = ["127.0.0.1:{http_server}", "127.0.0.1:{second_server}"]\n'
                 f'[sandbox.levels.network]\nallowDomains = ["localhost:{http_server}", "localhost:{second_server}"]\n')
    child = spawn_gtd(*_curl(f"localhost:{http_server}", f"localhost:{second_server}"), cwd=repo)
    child.expect(f"connect to localhost:{http_server} \\(build phase, level readwrite\\)")
    child.expect("run this phase at .*etwork \\(this run\\)")
    child.expect("Decision \\[o/n/p/u/d\\]")
    child.sendline("n")
    output, status = finish(child)
    assert status == 0, output
    assert output.count("REGISTRY-OK HTTP=200") == 2 and "The sandbox blocked" not in output, output
    decisions = [(e["target"], e["decision"], e["decided_by"]) for e in AuditLog(repo).read()
                 if e["event"] == "escalation_decision"]
    assert decisions == [(f"localhost:{http_server}", "network", "user"),
                         (f"localhost:{second_server}", "allow", "phase raised to network this run")]
    assert "localhost" not in user_config_file().read_text().split("[sandbox.levels.network]")[0]


def test_a_host_the_network_level_does_not_allow_gets_no_such_choice(repo, http_server, spawn_gtd):
    _user_config(f'[sandbox.levels.readwrite]\nallowDomains = ["127.0.0.1:{http_server}"]\n')
    child = spawn_gtd(*_curl(f"localhost:{http_server}"), cwd=repo)
    child.expect("Decision \\[o/p/u/d\\]")
    child.sendline("d")
    output, _ = finish(child)
    assert "HTTP=403" in output


def test_in_a_build_the_choice_lets_the_test_command_through_and_later_runs_start_at_network(repo, http_server, second_server, spawn_gtd):
    """gtd build: the test command reaches a registry at readwrite, the person picks n, the network level's
    second registry is let through without a question, the tests pass and the build lands."""
    import json

    from support import git

    _user_config(f'[sandbox.levels.readwrite]\nallowDomains = ["127.0.0.1:{http_server}", "127.0.0.1:{second_server}"]\n'
                 f'[sandbox.levels.network]\nallowDomains = ["localhost:{http_server}", "localhost:{second_server}"]\n')
    plan = "# Fetch\n\n## Action items\n- [ ] Add fetch.txt\n  - Tests: curl\n\n## Open questions\n\n## Learnings\n"
    script = repo.parent / "script.json"
    script.write_text(json.dumps({
        "plan": [{"actions": [{"write": {"path": "TODO.md", "content": plan}}]}],
        "build": [{"actions": [{"write": {"path": "fetch.txt", "content": "ok\n"}}]}]}))
    curl = "curl --noproxy '' -fsS --max-time 30 http://localhost:{}/ >/dev/null"  # through the proxy on purpose
    (repo / ".gtdrc.json").write_text(json.dumps({
        "provider": "scripted", "script": str(script),
        "testCommand": f"{curl.format(http_server)} && {curl.format(second_server)}"}))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "configure gtd")
    (repo / "TODO.md").write_text("# Fetch\n")
    plan_run = spawn_gtd("plan", cwd=repo, timeout=120)
    assert finish(plan_run)[1] == 0
    child = spawn_gtd("build", cwd=repo, timeout=120)
    child.expect(f"connect to localhost:{http_server} \\(build phase, level readwrite\\)")
    child.expect("Decision \\[o/n/p/u/d\\]")
    child.sendline("n")
    output, status = finish(child)
    assert status == 0, output
    assert "The sandbox blocked" not in output
    assert git(repo, "log", "-1", "--format=%s").startswith("🔨")
    decided = [(e["target"], e["decided_by"]) for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert decided == [(f"localhost:{http_server}", "user"), (f"localhost:{second_server}", "phase raised to network this run")]
