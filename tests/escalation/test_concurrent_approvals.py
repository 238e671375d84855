"""Two processes approving different rules into the same files at the same time lose nothing."""

from __future__ import annotations

import json
import multiprocessing
import os

import tomlkit

from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import save_rule
from gtd.escalation.request import EscalationRequest
from gtd.escalation.trust import TrustStore
from gtd.paths import user_config_file
from support import git

PER_PROCESS = 12


def _approve(repo, tag, barrier, scope):
    barrier.wait()  # start together
    for i in range(PER_PROCESS):
        request = EscalationRequest.create(kind="domain", target=f"{tag}{i}.example:443", phase=Phase.BUILD,
                                           level=Level.READWRITE, reason="concurrency test")
        save_rule(request, scope, repo)
    os._exit(0)  # skip pytest's atexit machinery in the forked child


def _race(repo, scope):
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_approve, args=(repo, tag, barrier, scope)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
    assert [p.exitcode for p in procs] == [0, 0]


def _expected():
    return {f"{tag}{i}.example:443" for tag in "ab" for i in range(PER_PROCESS)}


def test_concurrent_project_approvals_keep_every_rule_and_commit_each(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make test"}, indent=2) + "\n")
    git(repo, "add", ".gtdrc.json")
    git(repo, "commit", "-qm", "config")
    TrustStore().trust(repo / ".gtdrc.json")
    _race(repo, "project")
    data = json.loads((repo / ".gtdrc.json").read_text())
    allowed = data["sandbox"]["levels"]["readwrite"]["allowDomains"]
    assert set(allowed) == _expected() and len(allowed) == 2 * PER_PROCESS
    assert data["testCommand"] == "make test"
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert sum(s.startswith("🔐 gtd: allow ") for s in subjects) == 2 * PER_PROCESS  # one commit per approval
    assert git(repo, "status", "--porcelain").strip() == ""
    assert TrustStore().is_trusted(repo / ".gtdrc.json")  # still trusted after both processes re-pinned


def test_concurrent_user_approvals_keep_every_rule(repo):
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# mine\nprovider = \"pi\"\n")
    _race(repo, "user")
    text = path.read_text()
    assert text.startswith("# mine\nprovider = \"pi\"\n")
    allowed = tomlkit.parse(text).unwrap()["sandbox"]["levels"]["readwrite"]["allowDomains"]
    assert set(allowed) == _expected() and len(allowed) == 2 * PER_PROCESS
