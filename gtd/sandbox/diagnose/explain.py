"""`gtd sandbox explain`'s facts: the policy as configured, plus how this machine's backend enforces it
(Landlock's state, the mechanism behind each resource limit). The policy itself never asks the kernel."""

from __future__ import annotations

import sys


def explained(policy) -> dict:
    data = policy.to_dict()
    if "limits" in data:
        data["limits"]["enforcedBy"] = _limits_enforced_by(policy)
    data["landlock"] = _landlock_status()
    if data.get("sandboxed") and sys.platform.startswith("linux"):
        from gtd.sandbox.linux.backend_choice import status

        data["backend"] = status(policy.backend)  # docs/landlock-backend.md: what the Landlock backend refuses less well
    return data


def _limits_enforced_by(policy) -> dict:
    from gtd.sandbox.linux.limits import enforced_by

    return enforced_by(policy.limits)


def _landlock_status() -> str:
    if sys.platform != "linux":
        return "not used on this platform"
    from gtd.sandbox.linux.kernel import status

    return status()["landlock"]
