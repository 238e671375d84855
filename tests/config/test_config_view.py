"""ConfigView (config/view.py) reads validated values exactly as the GtdConfig model does, for
everything the sandbox policy takes from the config: a policy built from either is the same."""

from __future__ import annotations

import pytest

from gtd.config.levels import Level, Phase
from gtd.config.schema import GtdConfig
from gtd.config.view import ConfigView
from gtd.providers.base import SandboxNeeds
from gtd.sandbox.policy.sandbox_policy import build_policy

CUSTOM = {
    "provider": "scripted",
    "script": "demo.json",
    "sandbox": {
        "enabled": True,
        "phases": {"plan": "readwrite", "build": "network"},
        "limits": {"processes": 100, "memory": "1G"},
        "levels": {
            "readonly": {"denyReadPaths": ["secrets/"], "denyDomains": ["tracker.example"]},
            "readwrite": {"writablePaths": ["build", "~/.cache/pip"]},
            "network": {"allowDomains": ["example.org:443"]},
        },
    },
}


@pytest.mark.parametrize("raw", [{}, CUSTOM], ids=["defaults", "custom"])
@pytest.mark.parametrize("phase,level", [(None, None), (Phase.PLAN, None), (Phase.BUILD, None),
                                         (Phase.LEARN, None), (None, Level.NETWORK), (Phase.PLAN, Level.READWRITE)])
def test_a_policy_from_the_view_is_the_policy_from_the_model(repo, isolated_home, raw, phase, level):
    model = GtdConfig.model_validate(raw)
    view = ConfigView(model.model_dump(by_alias=True, mode="json"))
    needs = SandboxNeeds(model_hosts=["api.example.com:443"])
    from_model = build_policy(model, workspace=repo, phase=phase, level=level, needs=needs, home=isolated_home)
    from_view = build_policy(view, workspace=repo, phase=phase, level=level, needs=needs, home=isolated_home)
    assert from_view == from_model
    assert from_view.limits == from_model.limits


def test_the_view_reads_like_the_model():
    model = GtdConfig.model_validate(CUSTOM)
    view = ConfigView(model.model_dump(by_alias=True, mode="json"))
    assert view.provider == model.provider and view.script == model.script
    assert view.test_timeout_seconds == model.test_timeout_seconds
    assert view.sandbox.levels.for_level(Level.NETWORK).allow_domains == model.sandbox.levels.network.allow_domains
    assert Level(view.sandbox.phases.for_phase(Phase.BUILD)) is model.sandbox.phases.build
    with pytest.raises(AttributeError):
        view.no_such_key
