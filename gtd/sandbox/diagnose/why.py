"""Answers to "why was this blocked?": which rule of a policy decides a path write or a connection.

Pure and deterministic: the same functions the sandbox enforces, read back as a sentence,
plus what a person could change if they want a different answer.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from gtd.config.levels import Level
from gtd.sandbox.policy.domains import DomainRules, parse_rule, split_host_port
from gtd.sandbox.policy.sandbox_policy import PHASE_FILES, SandboxPolicy, loopback_ports


@dataclass(frozen=True)
class Verdict:
    target: str
    allowed: bool
    reason: str
    rule: str | None = None  # the policy entry that decided
    fix: str | None = None  # what would change the answer (if anything may)

    def to_dict(self) -> dict:
        return asdict(self)


def _under(path: Path, roots) -> Path | None:
    """The most specific of `roots` that is path or one of its parents."""
    found = [root for root in roots if path == root or root in path.parents]
    return max(found, key=lambda root: len(root.parts)) if found else None


def why_path(policy: SandboxPolicy, path: Path) -> Verdict:
    """Would a write to `path` be allowed under this policy, and by which rule."""
    path = Path(path).absolute()
    target = str(path)
    level = policy.level.value
    if policy.unrestricted:
        return Verdict(target, True, f"level {level} runs without a sandbox")
    credential = next((c for c in policy.credential_files if _under(path, (c.target, c.source))), None)
    if credential is not None:
        return Verdict(target, False, f"a credential file of the chosen model provider ({credential.origin}): "
                       "readable inside the sandbox, never writable", str(credential.target),
                       "edit it yourself, outside gtd")
    hidden = _under(path, policy.deny_read)
    writable = _under(path, policy.writable)
    if hidden is not None and writable is not None and hidden in writable.parents:
        hidden = None  # a writable path configured below a hidden directory is the more specific rule
    covered = _hidden_root(policy, path) if writable is None else None
    if hidden is not None:
        if covered is not None:
            return Verdict(target, False, f"hidden from the agent: {covered[1]}, and it is a secret path (unreadable "
                           "below level full)", str(hidden), "remove it from sandbox.levels.*.denyReadPaths, then add "
                           "it to sandbox.readPaths (built-in secret paths cannot be removed; a chosen cloud model "
                           "provider's credential files are passed in read-only)")
        return Verdict(target, False, "hidden from the agent (secrets are unreadable below level full)", str(hidden),
                       "remove it from sandbox.levels.*.denyReadPaths (built-in secret paths cannot be removed)")
    if covered is not None:
        return Verdict(target, False, f"not writable at level {level}, and hidden from the agent: {covered[1]}",
                       str(covered[0]), f"add it to sandbox.levels.{level}.writablePaths to let the agent write it, "
                       f"or {covered[2]}" if covered[2] == READ_PATHS_FIX else covered[2])
    protected = _under(path, policy.protected)
    if protected is not None:
        return Verdict(target, False, "protected: gtd or the host later runs or trusts it (git hooks, config or "
                       "history, rc files, agent or gtd config), so the agent may never change it below level full",
                       str(protected), "edit it yourself, outside gtd")
    if writable is not None:
        return Verdict(target, True, f"writable at level {level}", str(writable))
    return Verdict(target, False, f"not writable at level {level} (the workspace is writable from readwrite up)", None,
                   f"approve it when gtd asks, or add it to sandbox.levels.{level}.writablePaths")


READ_PATHS_FIX = ("to sandbox.readPaths to let it only read it (in your user config; in .gtdrc.json either counts "
                  "once you run `gtd trust`)")


def _hidden_root(policy: SandboxPolicy, path: Path) -> tuple[Path, str, str] | None:
    """(the hidden root, why it is hidden, the fix) when `path` is in the hidden HOME (home_allow.py) or a
    hidden place outside it, and nothing the policy shows covers it; else None."""
    shown = [p for p, _ in policy.home_visible] + [policy.workspace, *policy.writable]
    shown += [c.target for c in policy.credential_files]
    shown += [target for target, _, _ in policy.generated_files]
    if _under(path, shown) is not None:
        return None
    if policy.home_hidden and _under(path, (policy.home,)) is not None:
        return (policy.home, "HOME is hidden inside the sandbox except toolchains, package caches and the other "
                "entries `gtd sandbox explain` lists (homeAllowList)", READ_PATHS_FIX)
    area = next(((p, why) for p, why in policy.hidden_areas if _under(path, (p,)) is not None), None)
    if area is not None:
        return (area[0], f"{area[0]} is hidden inside the sandbox ({area[1]})",
                "nothing below level full shows it: run at level full (`--level full`) if the work needs it")
    return None


def why_host(policy: SandboxPolicy, target: str, at_network: Callable[[], SandboxPolicy] | None = None) -> Verdict:
    """Would a connection to `host[:port]` (default 443) be let through by the proxy, and why. `at_network`:
    the same policy at level network, to say whether running there would allow a refused host."""
    host, port = split_host_port(target)
    port = port or 443
    shown = f"{host}:{port}"
    level = policy.level.value
    if policy.unrestricted:
        return Verdict(shown, True, f"level {level} runs without a sandbox")
    rules = DomainRules.parse(policy.reachable, policy.deny_domains)
    if host.strip("[]").lower() in ("localhost", "::1") or host.startswith("127."):
        if port in policy.host_loopback_ports:
            origin = next((f"the model API from {o}" for h, o in policy.model_host_origins if split_host_port(h)[1] == port),
                          None) or next((f"your own {r.tool} registry setting ({r.origin})" for r in policy.registries
                                         if loopback_ports([r.rule]) == [port]), None)
            return Verdict(shown, True, "forwarded to the same port on the host's loopback"
                           + (f" ({origin})" if origin else ""), f"hostLoopbackPorts: {port}")
        forwarded = why_host(at_network(), target) if at_network is not None and policy.level.rank < Level.NETWORK.rank \
            else None
        instead = (f"run at level network (`--level network`), where it is {forwarded.reason}"
                   if forwarded is not None and forwarded.rule else
                   f"add {port} to sandbox.levels.{level}.hostLoopbackPorts")
        return Verdict(shown, True, "the sandbox's own loopback: a server a command starts there is reached "
                       f"directly; to reach the host's {shown} instead, {instead}")
    decision = rules.decide(host, port)
    if decision == "deny":
        rule = next(r for r in rules.deny if r.matches(host, port))
        return Verdict(shown, False, "denied by a deny rule (a deny in any config layer wins)", str(rule),
                       "remove it from sandbox.levels.*.denyDomains")
    if decision == "allow":
        rule = next(r for r in rules.allow if r.matches(host, port))
        registry = next((r for r in policy.registries if str(parse_rule(r.rule)) == str(rule)), None)
        origin = next((o for h, o in policy.model_host_origins if str(parse_rule(h)) == str(rule)), None)
        source = f"the provider's model API (from {origin})" if origin \
            else "the provider's model API" if str(rule) in {str(parse_rule(h)) for h in policy.model_hosts} \
            else f"your own {registry.tool} registry setting ({registry.origin})" if registry \
            else f"allowDomains at or below level {level}"
        return Verdict(shown, True, f"allowed by {source} (names resolving to loopback, link-local or metadata "
                       "addresses are still refused unless the IP itself is listed)", str(rule))
    fix = f"add {shown} to sandbox.levels.{level}.allowDomains"
    if at_network is not None and policy.level.rank < Level.NETWORK.rank:
        network = why_host(at_network(), target)
        fix += (f", or run at level network (`--level network`, or sandbox.phases.<phase>: network), where it is "
                f"{network.reason.split(' (')[0]}" if network.allowed else
                " (level network does not allow it either)")
    return Verdict(shown, False, f"no rule allows it at level {level}: gtd asks you live (a headless run refuses it "
                   "and saves a request for `gtd approve`)", None, fix)


def why(policy: SandboxPolicy, target: str, cwd: Path, *, as_path: bool = False,
        at_network: Callable[[], SandboxPolicy] | None = None) -> Verdict:
    """A path (with a slash, starting with . or ~, existing, named by the policy, or forced) or else a
    host[:port]. `TODO.md` looks like a host name (.md is a top-level domain) yet is a phase's file."""
    candidate = Path(target).expanduser()
    candidate = Path(os.path.normpath(candidate if candidate.is_absolute() else cwd / candidate))
    named = candidate.name in PHASE_FILES.values() or candidate in policy.writable or candidate in policy.protected \
        or candidate in policy.deny_read
    if as_path or "/" in target or target.startswith((".", "~")) or os.path.lexists(candidate) or named:
        return why_path(policy, candidate)
    return why_host(policy, target, at_network)
