"""macOS backend: the generated seatbelt profile for each level (snapshots; sandbox-exec cannot run here)."""

from __future__ import annotations

import pytest

from gtd.config.schema import GtdConfig, Level, Phase
from gtd.providers.base import SandboxNeeds
from gtd.sandbox.policy.sandbox_policy import build_policy
from gtd.sandbox.macos.seatbelt import macos_path, render_profile

from sandbox_support import git


def _profile(tmp_path, repo, home, level, phase=None) -> str:
    git("config", "core.hooksPath", ".husky", cwd=repo)
    needs = SandboxNeeds(model_hosts=["api.anthropic.com:443"], writable_dirs=[home / ".claude"],
                         protected_paths=[home / ".claude/settings.json"])
    policy = build_policy(GtdConfig(), workspace=repo, level=level, phase=phase, needs=needs, home=home)
    text = render_profile(policy, proxy_port=49152)
    # Stable paths for the snapshot: the temp dir becomes /Users/dev.
    return text.replace(macos_path(tmp_path), "/Users/dev")


@pytest.mark.parametrize("level,phase", [(Level.READONLY, Phase.PLAN), (Level.READWRITE, Phase.BUILD), (Level.NETWORK, None)])
def test_profile_per_level(tmp_path, repo, home, level, phase, snapshot):
    text = _profile(tmp_path, repo, home, level, phase)
    assert text == snapshot


def test_profile_invariants(tmp_path, repo, home):
    text = _profile(tmp_path, repo, home, Level.READWRITE)
    assert text.splitlines()[2] == "(deny default)"
    assert '(allow network-outbound (remote ip "localhost:49152"))' in text
    assert '(subpath "/Users/dev/repo/.git")' in text and '(subpath "/Users/dev/repo/.husky")' in text
    assert '(subpath "/Users/dev/home/.ssh")' in text
    # protected denies come after the writable allow (later rules win in SBPL)
    assert text.index("(allow file-write*") < text.index("(deny file-write*")
    assert "/private/tmp" in text and '"/tmp' not in text


def test_full_level_has_no_profile(tmp_path, repo, home):
    policy = build_policy(GtdConfig(), workspace=repo, level=Level.FULL, home=home)
    with pytest.raises(ValueError):
        render_profile(policy, proxy_port=1)
