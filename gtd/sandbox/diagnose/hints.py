"""Hints for errors that hide their cause.

- A tool blames the network (or the registry) when what failed was a write the sandbox refused. npm is
  the classic case: a read-only cache dir surfaces as "Invalid response body while trying to fetch
  https://registry...: EROFS". gtd reads the refused path out of the output and says what it is, why the
  sandbox refused it and the one change that would allow it.
- A command fails on a file of HOME it cannot see: HOME is hidden inside the sandbox except its allow-list
  (home_allow.py), and "No such file or directory" does not say so. gtd names the setting that shows it
  (`sandbox.readPaths`), for the person only: it tells which files exist on the host.
- A connection to 127.0.0.1:PORT is refused inside while a server on this machine listens on that port:
  the sandbox's loopback is its own, and the client's "Connection refused" does not say so. gtd names the
  setting that forwards the port (`hostLoopbackPorts`).
- A registry of the person's own settings refuses a request for lack of credentials: the settings files
  inside are written by gtd with URLs only (registry_files.py). gtd names `sandbox.registryCredentials`.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

from gtd.config.levels import Level
from gtd.sandbox.diagnose.violations import denied_write_paths

# Wording that makes a filesystem refusal look like a network failure.
_NETWORKISH = re.compile(r"while trying to fetch|request to https?://\S+ failed|\bnetwork\b|fetch failed|"
                         r"ECONNRESET|ETIMEDOUT|EAI_AGAIN|(?:failed|unable|could not) to download", re.IGNORECASE)


# Node reports a recursive mkdir under a read-only mount as ENOENT: "ENOENT: ..., mkdir '/x/y'".
_ENOENT_WRITE = re.compile(r"ENOENT: [^,\n]*, (?:mkdir|open|rename|symlink|link) '(?P<p>[^'\n]+)'")


def _refused_paths(output: str) -> list[str]:
    found = list(denied_write_paths(output))
    for match in _ENOENT_WRITE.finditer(output):
        path = match.group("p")
        if path not in found and os.path.isdir(os.path.dirname(path)):  # the parent is there: not a missing dir
            found.append(path)
    return found


# "Connection refused" as curl, wget, Node, Python (requests, urllib3), psql and redis-cli word it.
_REFUSED = re.compile(r"ECONNREFUSED|Connection refused|Couldn't connect to server|actively refused", re.IGNORECASE)
# A loopback address with its port: `127.0.0.1:5432`, `localhost port 8080` (curl), `host='127.0.0.1',
# port=8080` (urllib3), `"127.0.0.1", port 5432` (psql), `(127.0.0.1), port 5432` (psycopg), `[::1]:8080`,
# `::1:3000` (Node, which tries localhost's IPv6 address first).
_LOOPBACK_PORT = re.compile(r"""(?:\blocalhost|\b127(?:\.\d{1,3}){3}|\[::1\]|(?<![\w:])::1)['")]{0,2}(?::|,? port[ =]?)(\d{1,5})\b""",
                            re.IGNORECASE)


MAX_PROBED_PORTS = 8


def misleading_error_hints(output: str, policy) -> list[str]:
    """One line per cause an error output hides: a refused write dressed up as a network error, a server
    on the host's loopback the client cannot see (none if neither). For the person: the second kind
    tells which of the host's loopback ports have a server, which the agent is not to learn (see
    refused_write_hints)."""
    told, person_only = split_hints(output, policy)
    return told + person_only


def split_hints(output: str, policy) -> tuple[list[str], list[str]]:
    """misleading_error_hints as (what the agent may be told too, what only the person may see). Only
    the first kind goes to the output handed back to the agent and to the audit log, which every
    sandbox can read where gtd's state dir is outside the hidden HOME (it is read-only inside); the second is
    shown on screen."""
    if not output:
        return [], []
    return refused_write_hints(output, policy), (host_loopback_hints(output, policy) + hidden_home_hints(output, policy)
                                                 + registry_credential_hints(output, policy)
                                                 + unreadable_rc_hints(output, policy))


def _host_listens(port: int) -> bool:
    """Whether a server on this machine's loopback accepts connections on `port` (gtd runs on the host)."""
    for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.settimeout(0.5)
                if probe.connect_ex((address, port)) == 0:
                    return True
        except OSError:
            pass
    return False


def host_loopback_hints(output: str, policy) -> list[str]:
    """A refused connection to a loopback port that is not forwarded while the host serves it. For the
    person only: it tells which of the host's loopback ports have a server."""
    if not _REFUSED.search(output) or getattr(policy, "unrestricted", False):
        return []
    named = [p for p in dict.fromkeys(int(m.group(1)) for m in _LOOPBACK_PORT.finditer(output))
             if 0 < p < 65536 and p not in policy.host_loopback_ports]
    ports = [p for p in named[:MAX_PROBED_PORTS] if _host_listens(p)]  # a long log costs at most a few probes
    return [_host_loopback_hint(port, policy) for port in ports]


def _host_loopback_hint(port: int, policy) -> str:
    """The change that forwards `port`: level network when it is the person's own registry (forwarded
    there), else the port in hostLoopbackPorts."""
    from gtd.sandbox.policy.sandbox_policy import loopback_ports
    from gtd.sandbox.policy.registries import user_registries

    level = policy.level.value
    mine = [r for r in user_registries(policy.home, workspace=policy.workspace) if loopback_ports([r.rule]) == [port]]
    where = (f"your own {' and '.join(dict.fromkeys(r.tool for r in mine))} registry "
             f"({'; '.join(dict.fromkeys(r.origin for r in mine))})") if mine else "the server"
    if mine and policy.level.at_most(Level.READWRITE):
        fix = ("is reached only at level network, where gtd forwards it: run at `--level network` (or set "
               "sandbox.phases.<phase> to network)")
    else:
        fix = (f"is reached only when the port is forwarded: add {port} to sandbox.levels.{level}.hostLoopbackPorts "
               "(in .gtdrc.json it counts once you run `gtd trust`)")
    return (f"[gtd] hint: 127.0.0.1:{port} inside the sandbox is the sandbox's own loopback, where nothing listens on "
            f"that port; {where} on this machine's 127.0.0.1:{port} {fix}.")


def refused_write_hints(output: str, policy) -> list[str]:
    """One line per refused write in an output that otherwise reads like a network error (none if not).
    What the agent may be told too: it names only paths its own command tried to write."""
    refused = _refused_paths(output)
    text = output
    for raw in refused:  # a path that happens to contain "network" is not a network error
        text = text.replace(raw, "")
    if not refused or not _NETWORKISH.search(text):
        return []
    from gtd.sandbox.diagnose.why import why_path

    hints = []
    for raw in refused:
        path = Path(raw) if raw.startswith("/") else policy.workspace / raw
        verdict = why_path(policy, path)
        if verdict.allowed:
            continue  # writable by policy: the failure has another cause
        fix = f" To allow it: {verdict.fix}." if verdict.fix else ""
        hints.append(f"[gtd] hint: this error mentions the network, but the cause is the sandbox refusing to write "
                     f"{path} ({verdict.reason}).{fix}")
    return hints


_MISSING = re.compile(r"No such file or directory|ENOENT|does not exist|not found|cannot access|Directory nonexistent",
                      re.IGNORECASE)
MAX_HIDDEN_NAMED = 3


def hidden_home_hints(output: str, policy) -> list[str]:
    """One line when the output names files of the hidden HOME (or another hidden place) that exist on this
    machine and reads like a missing file: they are hidden, and sandbox.readPaths would show them. For the
    person only (it tells which of HOME's files exist)."""
    home = str(getattr(policy, "home", ""))
    if not getattr(policy, "home_hidden", False) or not home or home + "/" not in output or not _MISSING.search(output):
        return []
    from gtd.sandbox.diagnose.why import _hidden_root

    named: list[str] = []
    for match in re.finditer(re.escape(home) + r"/[^\s'\"`:,;()\[\]{}<>]+", output):
        raw = os.path.normpath(match.group(0).rstrip("."))
        if raw in named or not os.path.lexists(raw) or _hidden_root(policy, Path(raw)) is None:
            continue
        if any(raw == str(d) or raw.startswith(str(d) + "/") for d in policy.deny_read):
            continue  # a secret path: sandbox.readPaths does not show it
        named.append(raw)
        if len(named) == MAX_HIDDEN_NAMED:
            break
    if not named:
        return []
    listed = ", ".join(named)
    return [f"[gtd] hint: {listed} {'exists' if len(named) == 1 else 'exist'} on this machine, but HOME is hidden "
            f"inside the sandbox except toolchains and caches (`gtd sandbox explain`); to let commands read "
            f"{'it' if len(named) == 1 else 'them'}, add {'it' if len(named) == 1 else 'them'} to sandbox.readPaths "
            f"(your user config, or .gtdrc.json once you run `gtd trust`)."]


# Yarn stops on an rc file it finds but cannot read (the Landlock backend: HOME hidden, no mount to replace it).
_UNREADABLE_RC = re.compile(r"(?:EACCES|[Pp]ermission denied)[^\n]*?'(?P<p>[^'\n]+/\.yarnrc(?:\.yml)?)'")


def unreadable_rc_hints(output: str, policy) -> list[str]:
    """One line when yarn stopped on the person's ~/.yarnrc or ~/.yarnrc.yml: under the Landlock backend it
    stays unreadable, and yarn has no variable naming another rc file (linux/tool_homes.py)."""
    home = str(getattr(policy, "home", ""))
    for match in _UNREADABLE_RC.finditer(output if getattr(policy, "home_hidden", False) else ""):
        path = match.group("p")
        if os.path.dirname(path) == home:
            name = "~/" + os.path.basename(path)
            return [f"[gtd] hint: yarn stops on your {name}: HOME is hidden inside the sandbox, and without user "
                    f"namespaces (the Landlock backend) gtd cannot put its generated copy there, as yarn has no "
                    f"variable naming another rc file. To let yarn run, allow user namespaces for bubblewrap "
                    f"(`gtd doctor` says how); else move {name}'s registry settings to ~/.npmrc (yarn 1) or "
                    f"YARN_NPM_REGISTRY_SERVER (yarn berry) and remove it (docs/landlock-backend.md)."]
    return []


# A registry's refusal for lack of credentials, as pip, npm, pnpm, yarn, cargo, go and Maven word it.
_UNAUTHORIZED = re.compile(r"\bE40[13]\b|\b40[13]\b[^\n]{0,40}(?:Unauthori[sz]ed|Forbidden)|Unauthori[sz]ed|"
                           r"authentication (?:required|failed)|status code:? 40[13]\b|ERR_PNPM_FETCH_40[13]|"
                           r"\bstatus(?: code)? 40[13]\b|\b40[13] (?:Unauthori[sz]ed|Forbidden)", re.IGNORECASE)


# How each tool's output names it (its error prefix or program name).
_TOOL_WORDS = {"npm": r"\bnpm\b", "yarn": r"\byarn\b", "pip": r"\bpip\b", "uv": r"\buv\b", "cargo": r"\bcargo\b",
               "go": r"\bgo: ", "maven": r"\bmaven\b|\[ERROR\]"}


def registry_credential_hints(output: str, policy) -> list[str]:
    """One line per registry of the person's own settings that the output shows refusing a request for lack
    of credentials: inside, the tools' settings files are written by gtd with URLs only (registry_files.py),
    so their credentials stay out unless the host is in sandbox.registryCredentials. For the person only
    (it names their settings files)."""
    if not output or not _UNAUTHORIZED.search(output) or getattr(policy, "unrestricted", False):
        return []
    from gtd.sandbox.policy.registries import user_registries

    opted = set(getattr(policy, "credential_hosts", ()))
    mine = [r for r in user_registries(policy.home, workspace=policy.workspace) if r.host not in opted]
    named = [r for r in mine if re.search(r"(?<![\w.-])" + re.escape(r.host) + r"(?![\w-])", output, re.IGNORECASE)]
    if not named:  # npm's E401 names no host: the registries of the tool the output names
        named = [r for r in mine if re.search(_TOOL_WORDS.get(r.tool, r.tool), output, re.IGNORECASE)]
    hints = []
    for registry in named[:MAX_HIDDEN_NAMED]:
        if any(f" {registry.host} " in hint for hint in hints):
            continue
        hints.append(f"[gtd] hint: {registry.host} may need credentials (the output shows a 401/403). Inside the sandbox your {registry.tool} "
                     f"settings ({registry.origin}) reach the tools with the registry's URL only, so any token or "
                     f"password for it stays out; to pass them for this host, add \"{registry.host}\" to "
                     "sandbox.registryCredentials in your user config (docs/registry-settings.md).")
    return hints
