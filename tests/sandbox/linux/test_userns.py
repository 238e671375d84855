"""When the kernel refuses user namespaces, gtd says which setting refuses them and the one change that
allows them: the count at start, before bwrap runs, and Ubuntu's AppArmor restriction once bwrap failed."""

from __future__ import annotations

import pytest

from gtd.config.schema import GtdConfig, Level
from gtd.errors import SandboxUnavailable
from gtd.sandbox.diagnose import doctor
from gtd.sandbox.linux import userns
from gtd.sandbox.linux.bwrap_backend import _probe_bwrap

from sandbox_support import requires_bwrap


# These are the bwrap backend's messages: under `sandbox.backend: auto` the same refusals pick the Landlock
# backend instead (test_auto_takes_the_landlock_backend_where_the_count_refuses_namespaces).
BWRAP = GtdConfig.model_validate({"sandbox": {"backend": "bwrap"}})


def _sysctl(tmp_path, monkeypatch, name: str, value: str) -> None:
    path = tmp_path / name
    path.write_text(value + "\n")
    monkeypatch.setattr(userns, name, path)


@requires_bwrap
def test_a_zero_namespace_count_stops_the_start_with_the_sysctl_that_allows_them(tmp_path, monkeypatch, sandbox):
    _sysctl(tmp_path, monkeypatch, "COUNT", "0")
    with pytest.raises(SandboxUnavailable) as refused:
        sandbox(Level.READWRITE, config=BWRAP)
    assert "user.max_user_namespaces = 0" in str(refused.value) and userns.COUNT_FIX in str(refused.value)
    assert "gtd doctor" in str(refused.value)
    _sysctl(tmp_path, monkeypatch, "COUNT", "15000")
    assert sandbox(Level.READWRITE).run(["true"], cwd=tmp_path).returncode == 0


def test_a_failed_bwrap_under_apparmors_restriction_names_it_for_a_non_root_user(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"  # what Ubuntu 24.04's bwrap says without a profile
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    _sysctl(tmp_path, monkeypatch, "APPARMOR", "1")
    monkeypatch.setattr(userns.os, "geteuid", lambda: 1000)
    said = _probe_bwrap(str(fake))
    assert said.startswith("bwrap: setting up uid map: Permission denied; AppArmor restricts")
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in said
    row = next(c for c in doctor.sandbox_checks() if c["name"] == "AppArmor userns restriction")
    assert not row["ok"] and row["required"] is False  # a profile can lift it: the sandbox start decides
    _sysctl(tmp_path, monkeypatch, "APPARMOR", "0")
    assert _probe_bwrap(str(fake)) == "bwrap: setting up uid map: Permission denied"
    monkeypatch.setattr(userns.os, "geteuid", lambda: 0)  # root is not restricted by it
    _sysctl(tmp_path, monkeypatch, "APPARMOR", "1")
    assert "AppArmor" not in _probe_bwrap(str(fake))


@requires_bwrap
def test_debians_switch_stops_a_non_root_users_start_with_the_sysctl_that_allows_it(tmp_path, monkeypatch, sandbox):
    # Debian's kernels before 11 refused user namespaces to every user but root by default; bwrap then
    # failed, and doctor's "user namespaces" row (the count only) said ok.
    _sysctl(tmp_path, monkeypatch, "CLONE", "0")
    monkeypatch.setattr(userns.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxUnavailable) as refused:
        sandbox(Level.READWRITE, config=BWRAP)
    assert "kernel.unprivileged_userns_clone = 0" in str(refused.value) and userns.CLONE_FIX in str(refused.value)
    row = next(c for c in doctor.sandbox_checks() if c["name"] == "unprivileged user namespaces")
    assert not row["ok"] and row["fix"] == userns.CLONE_FIX, row
    monkeypatch.setattr(userns.os, "geteuid", lambda: 0)  # root is not refused by it
    assert userns.refusal() is None
    _sysctl(tmp_path, monkeypatch, "CLONE", "1")
    monkeypatch.setattr(userns.os, "geteuid", lambda: 1000)
    assert userns.refusal() is None


@requires_bwrap
def test_auto_takes_the_landlock_backend_where_the_count_refuses_namespaces(tmp_path, monkeypatch, sandbox):
    from gtd.sandbox.linux.landlock import abi_version

    if abi_version() < 4:
        pytest.skip("the Landlock backend needs Landlock ABI 4")
    _sysctl(tmp_path, monkeypatch, "COUNT", "0")
    session = sandbox(Level.READWRITE)
    assert session.backend.name == "landlock" and "user.max_user_namespaces = 0" in session.backend.reason
    assert session.run(["true"], cwd=tmp_path).returncode == 0
    _sysctl(tmp_path, monkeypatch, "COUNT", "15000")
    assert sandbox(Level.READWRITE).backend.name == "bwrap"  # bwrap again where it can start
