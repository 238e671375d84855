"""Domain rules for the proxy: `host`, `*.host`, `*`, IP literals, each optionally `:port`.

Why a separate module: the matching is the security decision of the network boundary, so it is
pure and unit-tested on its own. A deny rule anywhere wins over any allow rule.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

from gtd.record import record

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Iterable, Literal

    Decision = Literal["allow", "deny", "unknown"]


@record(frozen=True)
class DomainRule:
    """One parsed rule. `port` None = any port; `wildcard` = `*.suffix` (subdomains only)."""

    host: str  # lower-case, no trailing dot; "*" = any host; IP literals normalised
    port: int | None
    wildcard: bool = False

    @property
    def is_ip_literal(self) -> bool:
        return _as_ip(self.host) is not None

    def matches(self, host: str, port: int) -> bool:
        return self.matches_normalised(normalise_host(host), port)

    def matches_normalised(self, host: str, port: int) -> bool:
        """`matches` for a host already through normalise_host (the proxy's checks normalise once)."""
        if self.port is not None and self.port != port:
            return False
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


# The IPv4 spellings inet_aton (and so getaddrinfo) accepts besides dotted quads: 2130706433, 0x7f.1, 0177.1.
_NUMERIC_IPV4 = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$")
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def normalise_host(host: str) -> str:
    """`_normalise_host`, remembered for names of DNS length (the proxy checks the same few on every
    connection; a long string from the sandbox is never kept)."""
    return _normalise_cached(host) if len(host) <= 256 else _normalise_host(host)


def _normalise_host(host: str) -> str:
    """One spelling per destination, so a rule about an address holds for every way of writing it:
    lower case, no trailing dot or brackets, IPv4-mapped IPv6 as IPv4, numeric IPv4 forms as dotted quads."""
    host = host.strip().lower().rstrip(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    ip = _as_ip(host)
    if ip is None and _NUMERIC_IPV4.match(host):
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return host
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip) if ip is not None else host


_normalise_cached = functools.lru_cache(maxsize=1024)(_normalise_host)


def valid_host(host: str) -> bool:
    """An IP literal, or an ASCII DNS name (letters, digits, '-', '_'; labels of 1-63; at most 253).

    Anything else could be read differently by the resolver than by the suffix match (escaped dots,
    userinfo, NULs, IDNA round trips), so the proxy refuses it before matching.
    """
    if _as_ip(host) is not None:
        return True
    return 0 < len(host) <= 253 and all(_LABEL.match(label) for label in host.split("."))


def is_ip(host: str) -> bool:
    """Whether `host` is an IP literal (v4 or v6), not a name."""
    return _as_ip(host) is not None


def _as_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    return _ip_cached(host) if len(host) <= 64 else _parse_ip(host)  # remembered for literal-sized strings


def _parse_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


_ip_cached = functools.lru_cache(maxsize=1024)(_parse_ip)  # pure, and the parsed addresses are immutable


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


@record(frozen=True)
class DomainRules:
    """The proxy's allow/deny lists. `decide` is the whole policy: deny wins, then allow, else unknown."""

    allow: tuple[DomainRule, ...] = ()
    deny: tuple[DomainRule, ...] = ()

    @classmethod
    def parse(cls, allow: Iterable[str], deny: Iterable[str]) -> "DomainRules":
        return cls(tuple(parse_rule(a) for a in allow), tuple(parse_rule(d) for d in deny))

    def decide(self, host: str, port: int) -> Decision:
        host = normalise_host(host)
        if any(rule.matches_normalised(host, port) for rule in self.deny):
            return "deny"
        if any(rule.matches_normalised(host, port) for rule in self.allow):
            return "allow"
        return "unknown"

    def names_host(self, host: str, port: int) -> bool:
        """Allowed by a rule that names it (exact or `*.suffix`), not just by `*`: such a name may
        resolve to a private address (an internal mirror); a name only `*` or a person approved may not."""
        host = normalise_host(host)
        return self.decide(host, port) == "allow" and any(r.host != "*" and r.matches_normalised(host, port)
                                                           for r in self.allow)

    def explicitly_allows_address(self, ip: str, port: int) -> bool:
        """An IP literal listed in the allow list (with matching port) is trusted even on loopback."""
        ip = normalise_host(ip)
        return any(r.is_ip_literal and r.matches_normalised(ip, port) for r in self.allow) and not any(
            r.matches_normalised(ip, port) for r in self.deny
        )
