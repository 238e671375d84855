"""Domain rules for the proxy: `host`, `*.host`, `*`, IP literals, each optionally `:port`.

Why a separate module: the matching is the security decision of the network boundary, so it is
pure and unit-tested on its own. A deny rule anywhere wins over any allow rule.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable, Literal

Decision = Literal["allow", "deny", "unknown"]


@dataclass(frozen=True)
class DomainRule:
    """One parsed rule. `port` None = any port; `wildcard` = `*.suffix` (subdomains only)."""

    host: str  # lower-case, no trailing dot; "*" = any host; IP literals normalised
    port: int | None
    wildcard: bool = False

    @property
    def is_ip_literal(self) -> bool:
        return _as_ip(self.host) is not None

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        host = normalise_host(host)
        if self.host == "*":
            return True
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host

    def __str__(self) -> str:
        name = f"*.{self.host}" if self.wildcard else self.host
        if ":" in name and self.host != "*":
            name = f"[{name}]"
        return name if self.port is None else f"{name}:{self.port}"


def normalise_host(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    ip = _as_ip(host)
    return str(ip) if ip is not None else host


def _as_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def split_host_port(text: str) -> tuple[str, int | None]:
    """`host`, `host:443`, `[::1]:443`, `::1` -> (host, port or None)."""
    text = text.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"unbalanced brackets in {text!r}")
        host, rest = text[1:end], text[end + 1 :]
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise ValueError(f"unexpected text after ']' in {text!r}")
        return host, _port(rest[1:], text)
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, _port(port, text)
    return text, None  # plain host, or a bare IPv6 literal


def _port(value: str, text: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ValueError(f"invalid port in {text!r}")
    return int(value)


def parse_rule(text: str) -> DomainRule:
    host, port = split_host_port(text)
    if host.strip().startswith("*.") and not host.strip()[2:].strip("."):
        raise ValueError(f"invalid wildcard in domain rule {text!r}")
    host = normalise_host(host)
    if not host:
        raise ValueError(f"empty host in domain rule {text!r}")
    if host == "*":
        return DomainRule("*", port)
    if host.startswith("*."):
        suffix = host[2:]
        if not suffix or "*" in suffix:
            raise ValueError(f"invalid wildcard in domain rule {text!r}")
        return DomainRule(suffix, port, wildcard=True)
    if "*" in host:
        raise ValueError(f"only a leading '*.' wildcard is supported: {text!r}")
    return DomainRule(host, port)


@dataclass(frozen=True)
class DomainRules:
    """The proxy's allow/deny lists. `decide` is the whole policy: deny wins, then allow, else unknown."""

    allow: tuple[DomainRule, ...] = ()
    deny: tuple[DomainRule, ...] = ()

    @classmethod
    def parse(cls, allow: Iterable[str], deny: Iterable[str]) -> "DomainRules":
        return cls(tuple(parse_rule(a) for a in allow), tuple(parse_rule(d) for d in deny))

    def decide(self, host: str, port: int) -> Decision:
        if any(rule.matches(host, port) for rule in self.deny):
            return "deny"
        if any(rule.matches(host, port) for rule in self.allow):
            return "allow"
        return "unknown"

    def explicitly_allows_address(self, ip: str, port: int) -> bool:
        """An IP literal listed in the allow list (with matching port) is trusted even on loopback."""
        ip = normalise_host(ip)
        return any(r.is_ip_literal and r.matches(ip, port) for r in self.allow) and not any(
            r.matches(ip, port) for r in self.deny
        )
