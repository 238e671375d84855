"""`gtd sandbox explain` names the person's registries, where each came from, and the package caches."""

from __future__ import annotations

from support import run_gtd


def test_explain_lists_registries_with_their_origin_and_the_caches(repo, home):
    (home / ".npmrc").write_text("registry=https://npm.corp.example/\n//npm.corp.example/:_authToken=T\n")
    (home / ".npm").mkdir()
    network = run_gtd("sandbox", "explain", "--level", "network", cwd=repo, env={"GOPROXY": "https://goproxy.example,direct"})
    assert network.returncode == 0, network.stderr
    assert "registries from your own settings (reachable without a prompt):" in network.stdout
    assert "npm.corp.example:443 (npm, from ~/.npmrc registry)" in network.stdout
    assert "goproxy.example:443 (go, from GOPROXY)" in network.stdout
    assert "registry credentials passed in: none" in network.stdout
    assert f"npm: {home / '.npm'}" in network.stdout and "package caches (" in network.stdout
    assert "T\n" not in network.stdout
    readwrite = run_gtd("sandbox", "explain", "--level", "readwrite", cwd=repo)
    assert "reachable without a prompt at level network" in readwrite.stdout
