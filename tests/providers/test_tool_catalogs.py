"""The forbidden-tools catalogs, pinned by snapshots, and checked against what the pinned CLIs
actually offer: an upstream change (a new interactive tool, a renamed one) fails here."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from fakemodel.server import say
from gtd.config.schema import Level, Phase
from gtd.providers import guard
from gtd.providers.registry import _load
from gtd.providers.runner import run_agent
from agents import SETUPS, point_at, require_cli
from provider_support import request_for

CATALOGS = {"claude": guard.CLAUDE_TOOLS, "opencode": guard.OPENCODE_TOOLS, "pi": guard.PI_TOOLS}
ALL_INTERACTIVE = {"AskUserQuestion", "EnterPlanMode", "ExitPlanMode", "question", "plan_enter", "plan_exit"}


def test_interactive_catalogs(snapshot):
    assert {name: sorted(tools) for name, tools in guard.INTERACTIVE_TOOLS.items()} == snapshot


def test_full_catalogs(snapshot):
    assert {name: sorted(tools) for name, tools in CATALOGS.items()} == snapshot


def test_interactive_tools_belong_to_their_catalog_and_providers_use_them():
    for name, catalog in CATALOGS.items():
        assert guard.INTERACTIVE_TOOLS[name] <= catalog
        assert _load(name).forbidden_tools == guard.INTERACTIVE_TOOLS[name]
    assert _load("scripted").forbidden_tools == frozenset(ALL_INTERACTIVE)


def test_forbidden_list_is_not_configurable():
    from gtd.config.schema import GtdConfig

    assert "forbidden" not in json.dumps(GtdConfig.model_json_schema()).lower()


def _offered(server) -> set[str]:
    names = set()
    for r in server.main_requests():
        for t in r.body.get("tools") or []:
            names.add(t.get("name") or (t.get("function") or {}).get("name"))
    return names


@pytest.mark.e2e
@pytest.mark.parametrize("cli", sorted(SETUPS))
def test_pinned_cli_offers_the_snapshotted_tools(cli, monkeypatch, fake_model, sandbox_session, tmp_path, snapshot):
    """What the pinned CLI reports (claude: the init event's tool list; all: the tools sent to the
    model) must match the snapshot and stay inside gtd's catalog, with no interactive tool offered."""
    require_cli(cli, monkeypatch)
    point_at(fake_model, monkeypatch)
    fake_model.script([say("nothing to do")])
    repo = tmp_path / "repo"
    repo.mkdir()
    provider = _load(cli)()
    session = sandbox_session(repo, level=Level.READWRITE, needs=provider.sandbox_needs())
    result = run_agent(provider, request_for(repo, "hello", Phase.BUILD, model=SETUPS[cli].model), session,
                       timeouts=SimpleNamespace(inactivity_seconds=90, run_seconds=180))
    assert result.ok, result.error
    reported = {"offered_to_model": sorted(_offered(fake_model))}
    if cli == "claude":
        reported["init_tools"] = sorted(result.events[0].tools)
    assert reported == snapshot
    seen = set().union(*reported.values())
    assert seen <= CATALOGS[cli], f"tools missing from gtd's {cli} catalog: {sorted(seen - CATALOGS[cli])}"
    assert not seen & ALL_INTERACTIVE
