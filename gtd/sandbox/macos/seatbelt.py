"""Render a SandboxPolicy as a macOS seatbelt profile (for `sandbox-exec -p`).

Same policy as the Linux backend: deny by default, the filesystem readable except denied reads,
writes only under the writable roots minus protected paths, no unlink/rename of a protected path
or of its ancestors inside a writable root (stops rename tricks), and network only to the
session's proxy port and its model credential gateway's port on localhost (so no unix sockets either).
Seatbelt cannot nest, and macOS resolves /tmp, /var and /etc to /private/..., which the profile must spell out.
"""

from __future__ import annotations

import os
from pathlib import Path

from gtd.sandbox.policy.sandbox_policy import SandboxPolicy
from gtd.sandbox.policy.containment import inside

_PRIVATE_ALIASES = ("/tmp", "/var", "/etc")

# The Mach services a command line tool needs, by what for; any other lookup is refused (deny default).
# Not the keychain's (com.apple.SecurityServer, securityd.xpc, secd, ...): `security find-generic-password`
# would reach the login keychain, where Claude Code keeps its login on macOS.
MACH_SERVICES = (
    ("user and group lookups (getpwuid, id, ls -l)", ("com.apple.system.opendirectoryd.libinfo",
                                                      "com.apple.system.opendirectoryd.membership",
                                                      "com.apple.system.DirectoryService.libinfo_v1")),
    ("the per-user temporary dir (confstr, TMPDIR)", ("com.apple.bsd.dirhelper",)),
    ("os_log and syslog", ("com.apple.logd", "com.apple.system.logger")),
    ("notify(3) (time zone, network changes)", ("com.apple.system.notification_center",)),
    ("preferences read through cfprefsd", ("com.apple.cfprefsd.daemon", "com.apple.cfprefsd.agent")),
    ("TLS certificate checks (Go, curl, Swift: Security.framework asks trustd)", ("com.apple.trustd",
                                                                                 "com.apple.trustd.agent",
                                                                                 "com.apple.ocspd")),
    ("proxy settings (Python's urllib, libcurl read them from configd)", ("com.apple.SystemConfiguration.configd",)),
    ("power assertions (caffeinate, long builds)", ("com.apple.PowerManagement.control",)),
)
# Keychain and authentication services: denied by name as well, after every allow (later rules win).
KEYCHAIN_SERVICES = ("com.apple.SecurityServer", "com.apple.securityd.xpc", "com.apple.secd", "com.apple.security.agent",
                     "com.apple.security.authhost", "com.apple.CoreAuthentication.daemon", "com.apple.security.keychaind",
                     "com.apple.security.syspolicy", "com.apple.authd")
# Credential and private-data stores under ~/Library: never readable or writable, at any level below full.
LIBRARY_SECRETS = (
    ("Keychains", "the login keychain and its database"),
    ("Accounts", "Internet Accounts' tokens"),
    ("Cookies", "apps' cookies"),
    ("Application Support/com.apple.TCC", "privacy permissions"),
    ("Safari", "Safari's history and passwords"),
    ("Containers/com.apple.Safari", "Safari's data"),
    ("Mail", "mail"),
    ("Messages", "messages"),
    ("Application Support/Google/Chrome", "Chrome's cookies and saved logins"),
    ("Application Support/BraveSoftware", "Brave's cookies and saved logins"),
    ("Application Support/Microsoft Edge", "Edge's cookies and saved logins"),
    ("Application Support/Firefox", "Firefox's profiles"),
    ("Application Support/Slack", "Slack's session tokens"),
    ("Application Support/discord", "Discord's session token"),
    ("Application Support/Code/User/globalStorage", "VS Code extensions' stored tokens"),
    ("Group Containers/2BUA8C4S2C.com.1password", "1Password's data"),
    ("Application Support/Claude", "the Claude desktop app's data"),
)


def macos_path(path: Path | str) -> str:
    text = os.path.normpath(str(path))
    for alias in _PRIVATE_ALIASES:
        if text == alias or text.startswith(alias + "/"):
            return "/private" + text
    return text


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mach_rules() -> list[str]:
    lines = ["", ";; Mach services: only those command line tools need"]
    for why, names in MACH_SERVICES:
        lines += [f";; {why}", "(allow mach-lookup"]
        lines += [f"  (global-name {_q(n)})" for n in names]
        lines.append(")")
    lines += [";; never the keychain's", "(deny mach-lookup"]
    lines += [f"  (global-name {_q(n)})" for n in KEYCHAIN_SERVICES]
    lines.append(")")
    return lines


def render_profile(policy: SandboxPolicy, *, proxy_port: int, gateway_port: int | None = None) -> str:
    """The profile; `gateway_port`: where the model credential gateway listens on the host's loopback."""
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
        "(allow user-preference-read)",
        "(allow ipc-posix-shm)",
        "(allow file-ioctl (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/random\") (literal \"/dev/urandom\"))",
    ]
    lines += _mach_rules()
    lines += [
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
    library = Path(macos_path(policy.home)) / "Library"
    lines += ["", ";; credential stores under ~/Library: neither read nor written (after every allow: later rules win)",
              "(deny file-read* file-write*"]
    lines += [f"  (subpath {_q(str(library / rel))})" for rel, _ in LIBRARY_SECRETS]
    lines.append(")")
    parents = sorted({str(library)} | {str((library / rel).parent) for rel, _ in LIBRARY_SECRETS})
    lines += [";; nor moved away from under those rules by renaming a parent", "(deny file-write-unlink"]
    lines += [f"  (literal {_q(p)})" for p in parents if inside(p, str(library))]
    lines.append(")")
    lines += [
        "",
        ";; network: only the session's filtering proxy",
        "(deny network*)",
        f'(allow network-outbound (remote ip "localhost:{int(proxy_port)}"))',
    ]
    if gateway_port is not None:
        lines += [";; and the model credential gateway (the real key is put in on the host)",
                  f'(allow network-outbound (remote ip "localhost:{int(gateway_port)}"))']
    lines.append("")
    return "\n".join(lines)
