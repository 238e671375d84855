"""A project file that chooses the agent CLI or its model needs `gtd trust` (issue 22, class 6).

The choice decides which of the person's API keys enter every sandboxed command: the agent wrote
`"gtd": {"agent": "pi"}` into package.json, or `{"provider": "opencode"}` into a new .gtdrc.json, and
every later command got the person's OpenAI, Gemini, OpenRouter and xAI keys. Until the file is
trusted the person's own choice (here claude, in the user config) stands, and one line says so.
"""

from __future__ import annotations

import json
import shutil

import pytest
from agents import require_cli
from support import run_gtd

from gtd.paths import user_config_file

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

KEYS = {"ANTHROPIC_API_KEY": "sk-ant-person", "OPENAI_API_KEY": "sk-openai-person", "GEMINI_API_KEY": "gem-person",
        "OPENROUTER_API_KEY": "or-person", "XAI_API_KEY": "xai-person"}
OTHER_PROVIDERS_KEYS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "XAI_API_KEY")


@pytest.fixture
def person_uses_claude(repo, monkeypatch):
    for name in ("claude", "opencode", "pi"):
        require_cli(name, monkeypatch)
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('provider = "claude"\n')
    return repo


def _sandbox_env(repo) -> tuple[dict[str, str], str]:
    result = run_gtd("sandbox", "run", "--phase", "build", "--", "env", cwd=repo)
    assert result.returncode == 0, result.stderr
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    return env, result.stderr


@pytest.mark.parametrize(("name", "content", "chosen"), [
    ("package.json", {"name": "x", "gtd": {"agent": "pi"}}, "provider: pi"),
    (".gtdrc.json", {"provider": "opencode"}, "provider: opencode"),
    (".gtdrc.json", {"models": {"build": "openrouter/some/model"}}, "models.build: openrouter/some/model"),
])
def test_a_project_files_choice_of_provider_or_model_needs_trust(person_uses_claude, name, content, chosen):
    repo = person_uses_claude
    (repo / name).write_text(json.dumps(content))

    shown = json.loads(run_gtd("config", "show", "--json", cwd=repo).stdout)["config"]
    assert shown["provider"] == "claude" and shown["models"]["build"] is None  # the person's choice stands
    env, stderr = _sandbox_env(repo)
    # claude's own key, as the person chose: a placeholder for it (the real one stays with gtd's gateway)
    assert env.get("ANTHROPIC_API_KEY", "").startswith("gtd-placeholder-")
    assert not [key for key in OTHER_PROVIDERS_KEYS if key in env], sorted(env)
    [line] = [line for line in stderr.splitlines() if "not trusted" in line]
    assert str(repo / name) in line and chosen in line and "gtd trust" in line


def test_once_trusted_the_projects_choice_counts(person_uses_claude):
    repo = person_uses_claude
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "opencode"}))
    assert "OPENAI_API_KEY" not in _sandbox_env(repo)[0]
    assert run_gtd("trust", cwd=repo).returncode == 0
    assert json.loads(run_gtd("config", "show", "--json", cwd=repo).stdout)["config"]["provider"] == "opencode"
    assert _sandbox_env(repo)[0].get("OPENAI_API_KEY", "").startswith("gtd-placeholder-")  # the key's stand-in


def test_a_run_uses_the_persons_provider_while_the_projects_choice_is_untrusted(repo, tmp_path):
    """The provider a phase really runs: the person chose the scripted agent; a .gtdrc.json naming claude
    (with the plan to commit) does not switch the run to claude, and the run says why in one line."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"plan": [{"actions": [{"write": {"path": "TODO.md", "content": (
        "# Counter\n\n## Action items\n- [ ] Add count.py\n  - Tests: test_count.py\n\n## Open questions\n\n"
        "## Learnings\n")}}]}]}))
    path = user_config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'provider = "scripted"\nscript = "{script}"\n')
    (repo / ".gtdrc.json").write_text(json.dumps({"provider": "claude"}))
    result = run_gtd("plan", "a counter", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "provider scripted" in result.stderr and "provider claude" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if "not trusted" in line]
    assert ".gtdrc.json" in line and "provider: claude" in line and "gtd trust" in line
