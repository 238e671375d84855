"""Whether this kernel lets gtd's user create user namespaces, and the one change that allows it where not.

bubblewrap (not setuid) needs an unprivileged user namespace. Three sysctls refuse one: the count
(`user.max_user_namespaces = 0`), Debian's switch for every user but root
(`kernel.unprivileged_userns_clone = 0`, the default of its kernels before Debian 11) and, on Ubuntu 23.10
and later, AppArmor's restriction
(`kernel.apparmor_restrict_unprivileged_userns = 1`), under which bwrap stops with "setting up uid
map: Permission denied" unless a profile allows it. All three are read from /proc/sys; root is not restricted
by Debian's switch or AppArmor's.
"""

from __future__ import annotations

import os
from pathlib import Path

COUNT = Path("/proc/sys/user/max_user_namespaces")
APPARMOR = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
COUNT_FIX = "`sudo sysctl -w user.max_user_namespaces=15000`"
CLONE = Path("/proc/sys/kernel/unprivileged_userns_clone")
CLONE_FIX = "`sudo sysctl -w kernel.unprivileged_userns_clone=1`"
APPARMOR_FIX = ("allow bwrap to create user namespaces with an AppArmor profile for it (Ubuntu: "
                "https://ubuntu.com/blog/ubuntu-23-10-restricted-unprivileged-user-namespaces), or "
                "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`")


def _value(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def checks() -> list[tuple[str, bool, str, str]]:
    """(name, ok, detail, fix) for each of the three sysctls this kernel has."""
    found = []
    if (count := _value(COUNT)) is not None:
        found.append(("user namespaces", count != "0", f"user.max_user_namespaces = {count}", COUNT_FIX))
    if (clone := _value(CLONE)) is not None:
        found.append(("unprivileged user namespaces", clone != "0" or os.geteuid() == 0,
                      f"kernel.unprivileged_userns_clone = {clone}", CLONE_FIX))
    if (restricted := _value(APPARMOR)) is not None:
        found.append(("AppArmor userns restriction", restricted == "0" or os.geteuid() == 0,
                      f"kernel.apparmor_restrict_unprivileged_userns = {restricted}", APPARMOR_FIX))
    return found


def refusal() -> str | None:
    """Why this user can make no user namespace here at all (the count is 0, or Debian's switch is off for a
    user other than root), with the fix; else None. Checked before bwrap runs: nothing could start."""
    if _value(COUNT) == "0":
        return f"user namespaces are disabled (user.max_user_namespaces = 0): enable them with {COUNT_FIX}"
    if os.geteuid() != 0 and _value(CLONE) == "0":
        return ("user namespaces are disabled for every user but root (kernel.unprivileged_userns_clone = 0): "
                f"enable them with {CLONE_FIX}")
    return None


def restriction() -> str | None:
    """AppArmor's restriction, with the fix, where it applies to this user; else None. Only a likely cause
    once bwrap has failed: a profile for bwrap lifts it, so it never refuses a start by itself."""
    if os.geteuid() != 0 and _value(APPARMOR) == "1":
        return f"AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1): {APPARMOR_FIX}"
    return None
