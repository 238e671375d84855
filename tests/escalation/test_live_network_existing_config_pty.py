"""Saving a live network approval into a .gtdrc.json the team already has (and the user never trusted):
only the one rule is added, the rest of the file is as it was, and the next run needs no question."""

from __future__ import annotations

import json

import pytest

from escalation_support import finish
from gtd.escalation.trust import TrustStore
from support import git, run_gtd

pytestmark = pytest.mark.bwrap

EXISTING = {"testCommand": "make test", "sandbox": {"levels": {"readwrite": {
    "denyDomains": ["tracker.example"], "allowDomains": ["cloned.example:443"]}}}, "provider": "pi"}


def _curl(target):
    return ["sandbox", "run", "--level", "readwrite", "--", "curl", "--noproxy", "", "-sS", "--max-time", "30", f"http://{target}/"]


def test_project_save_into_an_untrusted_existing_file(repo, registry, spawn_gtd):
    config = repo / ".gtdrc.json"
    config.write_text(json.dumps(EXISTING, indent=2) + "\n")
    git(repo, "add", ".gtdrc.json")
    git(repo, "commit", "-qm", "team config")

    child = spawn_gtd(*_curl(registry), cwd=repo)
    child.expect(f"connect to {registry}")
    child.expect("Decision")
    child.sendline("p")
    output, status = finish(child)
    assert status == 0 and "REGISTRY-OK" in output, output

    expected = json.loads(json.dumps(EXISTING))
    expected["sandbox"]["levels"]["readwrite"]["allowDomains"].append(registry)
    assert config.read_text() == json.dumps(expected, indent=2) + "\n"  # same order, same layout, one entry more
    assert git(repo, "show", "--name-only", "--format=%s", "HEAD").split("\n")[0] == \
        f"🔐 gtd: allow {registry} at readwrite (approved by user)"
    assert git(repo, "diff", "HEAD~1", "--stat").count("|") == 1  # only .gtdrc.json changed
    assert not TrustStore().is_trusted(config)  # approving one entry does not trust the clone's others

    again = run_gtd(*_curl(registry), cwd=repo)  # headless: the approved entry counts, nothing asked
    assert again.returncode == 0 and "REGISTRY-OK" in again.stdout, again.stderr
    assert "cloned.example:443" in again.stderr  # ...while the untrusted entry is still said to be ignored
