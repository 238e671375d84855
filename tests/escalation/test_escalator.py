"""The Escalator's decisions: saved rules first, then a person (answers fed in), or the headless deny."""

from __future__ import annotations

import io
import json
import re
import threading
import time

import tomlkit
from rich.console import Console

from gtd.audit import AuditLog
from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import Decision, Escalator
from gtd.escalation.pending import PendingStore
from gtd.escalation.request import EscalationRequest
from gtd.paths import user_config_file
from gtd.sandbox.session import NetworkRequest
from support import git


def _escalator(repo, answers=None, *, interactive=True, phase=Phase.BUILD):
    asked: list[str] = []

    def prompt_input(text):
        asked.append(text)
        if not answers:
            raise EOFError
        return answers.pop(0)

    out = io.StringIO()
    esc = Escalator(repo, interactive=interactive, audit=AuditLog(repo), phase=phase,
                    console=Console(file=out, width=200), prompt_input=prompt_input)
    return esc, asked, out


def _req(kind="domain", target="registry.npmjs.org:443", **kw):
    kw.setdefault("phase", Phase.BUILD)
    kw.setdefault("level", Level.READWRITE)
    return EscalationRequest.create(kind=kind, target=target, reason="npm install failed", **kw)


def _decisions(repo):
    return [(e["decision"], e["decided_by"]) for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]


def test_prompt_shows_the_request_and_the_rules_that_would_be_saved(repo):
    esc, asked, out = _escalator(repo, ["d"])
    assert esc.decide(_req()) == Decision.DENY
    text = out.getvalue()
    assert "connect to registry.npmjs.org:443 (build phase, level readwrite)" in text
    assert re.search(r"why: +npm install failed", text)
    assert "sandbox.levels.readwrite.allowDomains += 'registry.npmjs.org:443'" in text
    assert len(asked) == 1 and "[o/n/p/u/d]" in asked[0]  # a registry of the network level: n is offered
    assert not (repo / ".gtdrc.json").exists() and not user_config_file().exists()
    assert _decisions(repo) == [("deny", "user")]


def test_running_the_phase_at_network_raises_its_level_for_the_rest_of_the_run(repo):
    from gtd.config.loader import load_config
    from gtd.workflow.context import RunContext

    esc, asked, out = _escalator(repo, ["n"])
    assert esc.decide(_req()) == Decision.NETWORK
    assert "build runs at level network for the rest of this run" in out.getvalue()
    ctx = RunContext(repo=repo, loaded=load_config(repo), provider_factory=lambda config: None, escalator=esc,
                     audit=esc.audit, progress=None, reload_config=lambda: load_config(repo))
    assert ctx.level_for(Phase.BUILD) == Level.NETWORK and ctx.level_for(Phase.PLAN) == Level.READONLY
    esc, asked, _ = _escalator(repo, ["d"])
    esc.decide(_req(target="unknown.example:443"))  # not a registry of the network level: no such choice
    assert "[o/p/u/d]" in asked[0]


def test_unclear_answers_are_asked_again_and_empty_or_eof_denies(repo):
    esc, asked, out = _escalator(repo, ["yes", "maybe", "o"])
    assert esc.decide(_req()) == Decision.ONCE
    assert len(asked) == 3 and "please answer one of" in out.getvalue()
    esc, _, _ = _escalator(repo, [""])
    assert esc.decide(_req(target="a.example:443")) == Decision.DENY
    esc, _, _ = _escalator(repo, [])  # end of input
    assert esc.decide(_req(target="b.example:443")) == Decision.DENY


def test_once_allows_for_this_invocation_only_and_saves_nothing(repo):
    esc, asked, _ = _escalator(repo, ["o"])
    assert esc.decide(_req()) == Decision.ONCE
    assert esc.decide(_req()) == Decision.ONCE and len(asked) == 1  # not asked twice
    assert not (repo / ".gtdrc.json").exists() and not user_config_file().exists()
    again, asked_again, _ = _escalator(repo, ["d"])  # the next invocation asks again
    assert again.decide(_req()) == Decision.DENY and len(asked_again) == 1


def test_project_choice_writes_gtdrc_keeps_the_rest_and_commits_only_that_file(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "npm test", "$comment": "team settings"}, indent=4) + "\n")
    git(repo, "add", ".gtdrc.json")
    git(repo, "commit", "-qm", "add config")
    (repo / "wip.txt").write_text("unrelated work\n")
    esc, _, out = _escalator(repo, ["p"])
    assert esc.decide(_req()) == Decision.PROJECT
    data = json.loads((repo / ".gtdrc.json").read_text())
    assert list(data) == ["testCommand", "$comment", "sandbox"]  # key order kept, rule appended
    assert data["sandbox"] == {"levels": {"readwrite": {"allowDomains": ["registry.npmjs.org:443"]}}}
    assert (repo / ".gtdrc.json").read_text().startswith('{\n    "testCommand"')  # indentation kept
    assert git(repo, "log", "-1", "--format=%s").strip() == \
        "🔐 gtd: allow registry.npmjs.org:443 at readwrite (approved by user)"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [".gtdrc.json"]
    assert "wip.txt" in git(repo, "status", "--porcelain")
    [decision] = [e for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert decision["decided_by"] == "user" and decision["saved_to"].endswith(".gtdrc.json") and decision["commit"]
    assert "saved sandbox.levels.readwrite.allowDomains" in out.getvalue()


def test_user_choice_writes_the_user_config_keeping_comments(repo):
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# my settings\nprovider = \"claude\"  # the one I pay for\n")
    esc, _, _ = _escalator(repo, ["u"])
    request = _req(kind="path", target=str(repo.parent / "cache"), phase=Phase.PLAN, level=Level.READONLY)
    assert esc.decide(request) == Decision.USER
    text = path.read_text()
    assert text.startswith("# my settings\nprovider = \"claude\"  # the one I pay for\n")
    assert tomlkit.parse(text).unwrap()["sandbox"]["levels"]["readonly"]["writablePaths"] == [str(repo.parent / "cache")]
    assert not (repo / ".gtdrc.json").exists()
    assert git(repo, "log", "-1", "--format=%s").strip() == "initial commit"  # user rules are not committed


def test_level_request_saves_the_phase_level(repo):
    esc, _, _ = _escalator(repo, ["u"])
    request = _req(kind="level", target="network")
    assert esc.decide(request) == Decision.USER
    assert tomlkit.parse(user_config_file().read_text()).unwrap() == {"sandbox": {"phases": {"build": "network"}}}


def test_a_saved_rule_decides_without_asking(repo):
    esc, _, _ = _escalator(repo, ["p"])
    esc.decide(_req())
    later, asked, _ = _escalator(repo, [])
    assert later.decide(_req()) == Decision.PROJECT and asked == []
    (user_config_file()).parent.mkdir(parents=True, exist_ok=True)
    user_config_file().write_text('[sandbox.levels.readonly]\nallowDomains = ["*.example.org:443"]\n')
    # a lower level's rules hold at higher levels too; a wildcard rule covers the host
    assert later.decide(_req(target="pkg.example.org:443", level=Level.NETWORK)) == Decision.USER and asked == []
    assert _decisions(repo)[-2:] == [("project", "saved rule"), ("user", "saved rule")]


def test_a_deny_rule_wins_over_a_saved_allow(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"sandbox": {"levels": {"readwrite": {
        "allowDomains": ["registry.npmjs.org:443"], "denyDomains": ["registry.npmjs.org"]}}}}))
    esc, asked, _ = _escalator(repo, ["d"])
    assert esc.decide(_req()) == Decision.DENY and len(asked) == 1


def test_headless_denies_saves_pending_and_audits(repo):
    esc, asked, _ = _escalator(repo, interactive=False)
    first, second = _req(), _req(kind="path", target=str(repo / "dist" / "x"), phase=Phase.PLAN, level=Level.READONLY)
    assert esc.decide(first) == Decision.DENY and esc.decide(second) == Decision.DENY
    assert asked == []
    assert esc.headless_denied == [first, second]
    assert [r.id for r in PendingStore(repo).list()] == [first.id, second.id]
    assert _decisions(repo) == [("deny", "headless deny"), ("deny", "headless deny")]
    requests = [e for e in AuditLog(repo).read() if e["event"] == "escalation_request"]
    assert [(e["kind"], e["target"], e["phase"], e["level"]) for e in requests] == [
        ("domain", "registry.npmjs.org:443", "build", "readwrite"), ("path", str(repo / "dist" / "x"), "plan", "readonly")]


def test_a_rule_that_cannot_be_saved_is_said_and_allowed_once(repo):
    (repo / ".gtdrc.json").write_text("{ broken")
    esc, _, out = _escalator(repo, ["p"])
    assert esc.decide(_req()) == Decision.ONCE
    assert "could not save the rule" in out.getvalue() and "invalid JSON" in out.getvalue()
    assert (repo / ".gtdrc.json").read_text() == "{ broken"  # nothing lost
    [decision] = [e for e in AuditLog(repo).read() if e["event"] == "escalation_decision"]
    assert decision["decision"] == "once" and "invalid JSON" in decision["save_error"]


def test_network_decider_asks_once_per_host_one_question_at_a_time(repo):
    in_prompt, max_in_prompt, answers = [0], [0], {"a.example": "o", "b.example": "d"}
    lock = threading.Lock()

    def slow_answer(text):
        with lock:
            in_prompt[0] += 1
            max_in_prompt[0] = max(max_in_prompt[0], in_prompt[0])
        time.sleep(0.2)
        with lock:
            in_prompt[0] -= 1
        return answers[current[0]]

    current = [None]
    out = io.StringIO()
    esc = Escalator(repo, interactive=True, audit=AuditLog(repo), phase=Phase.BUILD,
                    console=Console(file=out, width=200), prompt_input=slow_answer)
    original = esc._decide

    def tracking(request, *rest):
        current[0] = request.target.split(":")[0]
        return original(request, *rest)

    esc._decide = tracking
    results: dict[tuple[str, int], list[bool]] = {}

    def connect(host):
        results.setdefault((host, 443), []).append(esc.network_decider(NetworkRequest(host, 443, Level.READWRITE)))

    threads = [threading.Thread(target=connect, args=(h,)) for h in ["a.example", "b.example"] * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {("a.example", 443): [True] * 3, ("b.example", 443): [False] * 3}
    assert max_in_prompt[0] == 1  # never two questions on screen at once
    assert out.getvalue().count("The sandbox blocked the agent") == 2  # one question per host
    # the test command later failing on the same host is not asked about again
    assert esc.decide(_req(target="b.example:443")) == Decision.DENY
    assert out.getvalue().count("The sandbox blocked the agent") == 2


def test_a_live_network_request_says_what_was_running(repo):
    esc, _, out = _escalator(repo, ["d"])
    esc.activity = "test command `npm test`"
    assert esc.network_decider(NetworkRequest("registry.npmjs.org", 443, Level.READWRITE)) is False
    assert re.search(r"why: +test command `npm test` opened a connection to it", out.getvalue())
    [pending_like] = [e for e in AuditLog(repo).read() if e["event"] == "escalation_request"]
    assert pending_like["reason"] == "test command `npm test` opened a connection to it"
    assert pending_like["phase"] == "build" and pending_like["target"] == "registry.npmjs.org:443"


def test_a_command_run_with_gtd_sandbox_run_is_not_called_the_agent(repo):
    esc, _, out = _escalator(repo, ["d"], phase=None)
    assert esc.network_decider(NetworkRequest("example.org", 443, Level.READWRITE)) is False
    assert "The sandbox blocked the command" in out.getvalue() and "the agent" not in out.getvalue()
