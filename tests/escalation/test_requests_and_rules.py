"""Requests name exactly what was blocked and the concrete rule saving them would add."""

from __future__ import annotations

import pytest

from gtd.config.schema import Level, Phase
from gtd.escalation.escalator import network_error_domains
from gtd.escalation.request import EscalationRequest


def _req(kind, target, **kw):
    kw.setdefault("phase", Phase.BUILD)
    kw.setdefault("level", Level.READWRITE)
    return EscalationRequest.create(kind=kind, target=target, reason="because", **kw)


def test_domain_rule_appends_host_port_at_the_level_it_was_raised():
    rule = _req("domain", "registry.npmjs.org:443").rule("project")
    assert (rule.key, rule.value, rule.append) == ("sandbox.levels.readwrite.allowDomains", "registry.npmjs.org:443", True)
    assert str(rule) == "sandbox.levels.readwrite.allowDomains += 'registry.npmjs.org:443'"


def test_path_rule_is_repo_relative_for_the_project_and_exact_for_the_user(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    request = _req("path", str(repo / "build" / "out.bin"), phase=Phase.PLAN, level=Level.READONLY)
    project, user = request.rule("project", repo), request.rule("user", repo)
    assert (project.key, project.value) == ("sandbox.levels.readonly.writablePaths", "build/out.bin")
    assert user.value == str(repo / "build" / "out.bin")  # a user rule holds in every repository: no relative path
    in_home = _req("path", str(tmp_path / "home" / ".cache" / "tool"))
    assert in_home.rule("user", repo).value == "~/.cache/tool"
    assert in_home.rule("project", repo).value == "~/.cache/tool"


def test_level_rule_sets_the_phase_level():
    request = _req("level", "network")
    assert request.requested_level == Level.NETWORK
    rule = request.rule("user")
    assert (rule.key, rule.value, rule.append) == ("sandbox.phases.build", "network", False)
    with pytest.raises(ValueError):
        _req("level", "network", phase=None)


def test_id_is_stable_and_depends_on_what_was_blocked_where():
    a, b = _req("domain", "pypi.org:443"), _req("domain", "pypi.org:443")
    assert a.id == b.id and a.created  # same request from another run: same id (pending list dedupes on it)
    assert len({a.id, _req("domain", "pypi.org:80").id, _req("domain", "pypi.org:443", level=Level.NETWORK).id,
                _req("domain", "pypi.org:443", phase=Phase.PLAN).id, _req("path", "pypi.org:443").id}) == 5


def test_request_round_trips_through_json():
    request = _req("level", "full")
    assert EscalationRequest.model_validate_json(request.model_dump_json()) == request


@pytest.mark.parametrize("output, expected", [
    ("curl: (6) Could not resolve host: example.com\n", [("example.com", 443)]),
    ("npm ERR! request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org",
     [("registry.npmjs.org", 443)]),
    ("WARNING: Retrying ... ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))"
     "': /simple/requests/\nERROR: HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded",
     [("pypi.org", 443)]),
    ("fatal: unable to access 'https://github.com/x/y.git/': Could not resolve host: github.com", [("github.com", 443)]),
    ("gtd sandbox: files.pythonhosted.org:8443 refused: not approved\n", [("files.pythonhosted.org", 8443)]),
    ("dial tcp: lookup proxy.golang.org on 127.0.0.53:53: no such host", [("proxy.golang.org", 443)]),
    ("AssertionError: 2 != 3\n", []),
    ("Could not resolve host: localhost-ish\n", []),  # not a domain name
])
def test_network_error_domains_from_tool_output(output, expected):
    assert network_error_domains(output) == expected
