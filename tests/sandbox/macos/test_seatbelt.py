"""macOS backend: the generated seatbelt profile for each level (snapshots; sandbox-exec cannot run here)."""

from __future__ import annotations

import re

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


def _forms(text: str, head: str) -> list[str]:
    """Each top-level form starting with `head` (comments dropped), as one line."""
    forms, current, depth, taking = [], [], 0, False
    for line in text.splitlines():
        code = line.split(";;", 1)[0].strip()
        if not code:
            continue
        if depth == 0:
            taking = code.startswith(head)
        if taking:
            current.append(code)
        depth += code.count("(") - code.count(")")
        if depth == 0 and current:
            forms.append(" ".join(current))
            current = []
    return forms


@pytest.mark.parametrize("level", [Level.READONLY, Level.READWRITE, Level.NETWORK])
def test_mach_lookups_are_a_list_that_leaves_out_the_keychain(tmp_path, repo, home, level):
    """No blanket `(allow mach-lookup)`: only named services, none of the keychain's, and those denied by
    name after every allow (later rules win in SBPL)."""
    text = _profile(tmp_path, repo, home, level)
    allows = _forms(text, "(allow mach-lookup")
    assert allows and all("(global-name " in form for form in allows)
    allowed = {name for form in allows for name in re.findall(r'\(global-name "([^"]+)"\)', form)}
    assert {"com.apple.trustd.agent", "com.apple.system.opendirectoryd.libinfo", "com.apple.bsd.dirhelper"} <= allowed
    assert not allowed & {"com.apple.SecurityServer", "com.apple.securityd.xpc", "com.apple.secd"}
    denies = _forms(text, "(deny mach-lookup")
    assert len(denies) == 1 and '(global-name "com.apple.SecurityServer")' in denies[0]
    assert text.rindex("(deny mach-lookup") > text.rindex("(allow mach-lookup")
    assert "(allow mach-lookup)" not in text


@pytest.mark.parametrize("level", [Level.READONLY, Level.READWRITE, Level.NETWORK])
def test_keychains_and_credential_stores_under_library_are_denied_after_every_allow(tmp_path, repo, home, level):
    text = _profile(tmp_path, repo, home, level)
    denied = next(f for f in _forms(text, "(deny file-read* file-write*"))
    for rel in ("Keychains", "Cookies", "Accounts", "Application Support/Google/Chrome", "Application Support/Slack"):
        assert f'(subpath "/Users/dev/home/Library/{rel}")' in denied
    last_allow = max(text.rindex("(allow file-read*"), text.rindex("(allow file-write*"))
    assert text.index("(deny file-read* file-write*") > last_allow
    unlink = _forms(text, "(deny file-write-unlink")[-1]
    assert '(literal "/Users/dev/home/Library")' in unlink and '(literal "/Users/dev/home/Library/Application Support")' in unlink


def test_library_stays_denied_when_home_is_writable(tmp_path, home):
    """HOME as the workspace (writable at readwrite): the keychains stay out of reach all the same."""
    git("init", "-q", cwd=home)
    policy = build_policy(GtdConfig(), workspace=home, level=Level.READWRITE, home=home)
    text = render_profile(policy, proxy_port=1).replace(macos_path(tmp_path), "/Users/dev")
    assert any(f'(subpath "/Users/dev/home")' in f for f in _forms(text, "(allow file-write*"))
    assert text.index('(subpath "/Users/dev/home/Library/Keychains")') > text.rindex("(allow file-write*")


@pytest.mark.parametrize("level", [Level.READONLY, Level.READWRITE, Level.NETWORK])
def test_the_model_gateway_port_is_the_only_rule_added(tmp_path, repo, home, level):
    """The credential gateway listens on the host's loopback: the profile lets commands reach its port, and
    nothing else changes (the Keychain stays denied)."""
    needs = SandboxNeeds(model_hosts=["api.anthropic.com:443"], writable_dirs=[home / ".claude"],
                         protected_paths=[home / ".claude/settings.json"])
    policy = build_policy(GtdConfig(), workspace=repo, level=level, needs=needs, home=home)
    before = render_profile(policy, proxy_port=49152).splitlines()
    after = render_profile(policy, proxy_port=49152, gateway_port=49153).splitlines()
    added = [line for line in after if line not in before]
    assert [line for line in before if line not in after] == []
    assert [line for line in added if not line.startswith(";;")] == ['(allow network-outbound (remote ip "localhost:49153"))']
    outbound = [form for form in _forms("\n".join(after), "(allow network")]
    assert outbound == ['(allow network-outbound (remote ip "localhost:49152"))',
                        '(allow network-outbound (remote ip "localhost:49153"))']
    assert "\n".join(after).index("(deny network*)") < "\n".join(after).index("localhost:49153")
    text = "\n".join(after)
    assert '(global-name "com.apple.SecurityServer")' in _forms(text, "(deny mach-lookup")[0]
    assert f'(subpath "{macos_path(home)}/Library/Keychains")' in _forms(text, "(deny file-read* file-write*")[0]
