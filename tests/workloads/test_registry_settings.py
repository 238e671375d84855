"""The person's own registry settings reach real pip and npm inside the sandbox: the registry they name is
reached at network without a question, and their credentials stay out unless they opt the host in."""

from __future__ import annotations

import shutil
import sys

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.sandbox.diagnose.hints import misleading_error_hints
from registries import REGISTRY_HOST
from workload_support import allow_registry, run

pytestmark = [pytest.mark.bwrap,
              pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("npm") is None, reason="needs bwrap and npm")]


def _npmrc(home, port: int) -> None:
    (home / ".npmrc").write_text(f"registry=http://{REGISTRY_HOST}:{port}/\n"
                                 f"//{REGISTRY_HOST}:{port}/:_authToken=NPM-SECRET-TOKEN\nfund=false\n")


def _asks(collected: list):
    return lambda request: collected.append(request) or False


def test_npmrc_registry_is_used_and_reached_without_a_prompt_and_its_token_stays_out(sandbox, repo, npm_registry, isolated_home):
    _npmrc(isolated_home, npm_registry.port)
    asked: list = []
    session = sandbox(Level.NETWORK, config=allow_registry(npm_registry.port, name=False), network_decider=_asks(asked))
    r = run(session, "npm install --no-audit gtd-shout && node -e \"console.log(require('gtd-shout')('ok'))\";"
                     " cat ~/.npmrc; npm config get registry; grep -r NPM-SECRET-TOKEN \"$NPM_CONFIG_USERCONFIG\" || echo no-token", repo)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "OK" in lines and f"http://{REGISTRY_HOST}:{npm_registry.port}/" in lines and lines[-1] == "no-token"
    assert asked == [] and session.violations == []
    assert npm_registry.authorizations and set(npm_registry.authorizations) == {None}


def test_opted_in_host_gets_its_npm_token(sandbox, repo, npm_registry, isolated_home):
    _npmrc(isolated_home, npm_registry.port)
    config = GtdConfig.model_validate({"sandbox": {"registryCredentials": [REGISTRY_HOST], "levels": {
        "network": {"allowDomains": [f"127.0.0.1:{npm_registry.port}"]}}}})
    r = run(sandbox(Level.NETWORK, config=config), "npm install --no-audit gtd-shout", repo)
    assert r.returncode == 0, r.stderr
    assert "Bearer NPM-SECRET-TOKEN" in npm_registry.authorizations


def test_pip_index_url_from_the_environment_is_used_without_its_password(sandbox, repo, registry, monkeypatch):
    registry.add_wheel("gtdwheel", "1.0", "VALUE = 'from-wheel'\n")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://me:PIP-SECRET@{REGISTRY_HOST}:{registry.port}/simple/")
    monkeypatch.setenv("PIP_TRUSTED_HOST", REGISTRY_HOST)
    asked: list = []
    session = sandbox(Level.NETWORK, config=allow_registry(registry.port, name=False), network_decider=_asks(asked))
    r = run(session, f"echo \"$PIP_INDEX_URL\"; {sys.executable} -m pip install -q --retries 0 --target out gtdwheel"
                     f" && PYTHONPATH=out {sys.executable} -c 'import gtdwheel; print(gtdwheel.VALUE)'", repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"http://{REGISTRY_HOST}:{registry.port}/simple/", "from-wheel"]
    assert asked == [] and not any(a and "PIP-SECRET" in a for a in registry.authorizations)


def test_npmrc_registry_on_the_hosts_loopback_is_forwarded_at_network(sandbox, repo, npm_registry, isolated_home):
    """A registry served on this machine (verdaccio on localhost:4873) named in ~/.npmrc: 127.0.0.1 inside is
    the sandbox's own, so gtd forwards that one port to the host's, as it does for a model API there."""
    (isolated_home / ".npmrc").write_text(f"registry=http://127.0.0.1:{npm_registry.port}/\nfund=false\n")
    asked: list = []
    session = sandbox(Level.NETWORK, network_decider=_asks(asked))
    assert npm_registry.port in session.policy.host_loopback_ports
    r = run(session, "npm install --no-audit --fetch-retries 0 gtd-shout"
                     " && node -e \"console.log(require('gtd-shout')('ok'))\"", repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "OK"
    assert asked == [] and session.violations == []
    readwrite = sandbox(Level.READWRITE)  # registries: network only, and the refusal's hint says so
    assert npm_registry.port not in readwrite.policy.host_loopback_ports
    r = run(readwrite, "npm install --no-audit --fetch-retries 0 gtd-shout", repo)
    assert r.returncode != 0 and f"ECONNREFUSED 127.0.0.1:{npm_registry.port}" in r.stdout + r.stderr
    hints = misleading_error_hints(r.stdout + r.stderr, readwrite.policy)
    assert len(hints) == 1 and "your own npm registry (~/.npmrc registry)" in hints[0], hints
    assert "run at `--level network`" in hints[0]


def test_the_same_registry_is_refused_at_readwrite(sandbox, repo, npm_registry, isolated_home):
    _npmrc(isolated_home, npm_registry.port)
    session = sandbox(Level.READWRITE, config=allow_registry(npm_registry.port, name=False))
    r = run(session, "npm install --no-audit --fetch-retries 0 gtd-shout", repo)
    assert r.returncode != 0
    assert [v.target for v in session.violations] == [f"{REGISTRY_HOST}:{npm_registry.port}"]


def test_config_files_with_credentials_are_seen_inside_without_them(sandbox, repo, isolated_home):
    (isolated_home / ".m2").mkdir()
    (isolated_home / ".m2/settings.xml").write_text(
        "<settings><servers><server><id>corp</id><password>MVN-SECRET</password></server></servers>"
        "<mirrors><mirror><id>corp</id><url>https://maven.corp.test/m2</url></mirror></mirrors></settings>\n")
    (isolated_home / ".config/pip").mkdir(parents=True)
    (isolated_home / ".config/pip/pip.conf").write_text("[global]\nindex-url = https://me:PIP-SECRET@pypi.corp.test/simple\n")
    (isolated_home / ".yarnrc.yml").write_text('npmRegistryServer: "https://yarn.corp.test"\nnpmAuthToken: "YARN-SECRET"\n')
    r = run(sandbox(Level.READWRITE), "cat ~/.m2/settings.xml ~/.config/pip/pip.conf ~/.yarnrc.yml", repo)
    assert r.returncode == 0, r.stderr
    assert "SECRET" not in r.stdout
    assert "https://maven.corp.test/m2" in r.stdout and "https://pypi.corp.test/simple" in r.stdout
    assert "https://yarn.corp.test" in r.stdout
    assert "PIP-SECRET" in (isolated_home / ".config/pip/pip.conf").read_text()  # the person's file is untouched
