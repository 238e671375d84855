"""Render a SandboxPolicy as a macOS seatbelt profile (for `sandbox-exec -p`).

Same policy as the Linux backend: deny by default, the filesystem readable except denied reads,
writes only under the writable roots minus protected paths, no unlink/rename of a protected path
or of its ancestors inside a writable root (stops rename tricks), and network only to the
session's proxy port on localhost (so no unix sockets either). Seatbelt cannot nest, and macOS
resolves /tmp, /var and /etc to /private/..., which the profile must spell out.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.sandbox.policy.sandbox_policy import SandboxPolicy
from gtd.sandbox.policy.containment import inside

_PRIVATE_ALIASES = ("/tmp", "/var", "/etc")


def macos_path(path: Path | str) -> str:
    text = os.path.normpath(str(path))
    for alias in _PRIVATE_ALIASES:
        if text == alias or text.startswith(alias + "/"):
            return "/private" + text
    return text


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_profile(policy: SandboxPolicy, *, proxy_port: int) -> str:
    if policy.unrestricted:
        raise ValueError("level full / disabled sandbox has no profile: the command runs unsandboxed")
    writable = [macos_path(p) for p in policy.writable]
    protected = sorted({macos_path(p) for p in policy.protected})
    deny_read = sorted({macos_path(p) for p in policy.deny_read})
    guarded = [p for p in protected if any(inside(p, w) for w in writable)]
    ancestors: set[str] = set()
    for p in guarded:
        root = max((w for w in writable if inside(p, w)), key=len)
        parent = os.path.dirname(p)
        while inside(parent, root) and parent != root:
            ancestors.add(parent)
            parent = os.path.dirname(parent)
        ancestors.add(root)

    lines = [
        "(version 1)",
        f";; gtd sandbox, level {policy.level.value}" + (f", phase {policy.phase.value}" if policy.phase else ""),
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow file-ioctl (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/random\") (literal \"/dev/urandom\"))",
        "",
        ";; reads: everything except secrets",
        "(allow file-read*)",
    ]
    if deny_read:
        lines.append("(deny file-read*")
        lines += [f"  (subpath {_q(p)})" for p in deny_read]
        lines.append(")")
    credentials = sorted({macos_path(p) for c in policy.credential_files for p in (c.target, c.source)})
    if credentials:
        lines += [";; a chosen cloud provider's credential files (credential_files.py): readable, never writable",
                  "(allow file-read*"]
        lines += [f"  (subpath {_q(p)})" for p in credentials]
        lines.append(")")
    lines += ["", ";; writes: the level's writable roots and temporary directories"]
    lines.append("(allow file-write*")
    lines += [f"  (subpath {_q(p)})" for p in writable]
    lines += ['  (subpath "/private/tmp")', '  (subpath "/private/var/folders")', '  (literal "/dev/null")', '  (literal "/dev/stdout")', '  (literal "/dev/stderr")']
    lines.append(")")
    if guarded:
        lines += ["", ";; protected paths stay read-only inside writable roots (deny beats allow)", "(deny file-write*"]
        lines += [f"  (subpath {_q(p)})" for p in guarded]
        lines.append(")")
    if ancestors:
        lines += [";; no renaming or removing their ancestors either", "(deny file-write-unlink file-write-create"]
        lines += [f"  (literal {_q(p)})" for p in sorted(ancestors)]
        lines.append(")")
    if credentials:
        lines += ["(deny file-write*"] + [f"  (subpath {_q(p)})" for p in credentials] + [")"]
    lines += [
        "",
        ";; network: only the session's filtering proxy",
        "(deny network*)",
        f'(allow network-outbound (remote ip "localhost:{int(proxy_port)}"))',
        "",
    ]
    return "\n".join(lines)
