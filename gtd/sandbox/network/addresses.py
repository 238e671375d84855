"""Which resolved addresses the proxy refuses to dial.

A name that resolves to loopback, link-local, a cloud metadata service or one of the host's own
addresses would let the agent reach services that trust "local" callers (DNS rebinding, SSRF).
Those are refused unless the allow list names the IP literal itself.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "fd00:ec2::254",  # AWS IPv6 metadata
    )
)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052's well-known prefix
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT, RFC 2765
_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible addresses


def _checked(ip_text: str) -> IPAddress:
    """The address to judge: an IPv6 address carrying an IPv4 one (mapped, 6to4, Teredo, NAT64, SIIT,
    IPv4-compatible) is judged as that IPv4 address, which is where a translating network delivers
    it (64:ff9b::7f00:1 must count as 127.0.0.1)."""
    ip: IPAddress = ipaddress.ip_address(ip_text)
    if not isinstance(ip, ipaddress.IPv6Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _TRANSLATED or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def forbidden_reason(ip_text: str) -> str | None:
    """Why this address may not be dialled (None = it may)."""
    ip = _checked(ip_text)
    if ip in METADATA_ADDRESSES:
        return "cloud metadata address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address"
    if ip.is_unspecified:
        return "unspecified address"
    if ip.is_multicast or ip == ipaddress.ip_address("255.255.255.255"):
        return "multicast/broadcast address"
    if ip in host_addresses():
        return "address of this host"
    return None


def private_reason(ip_text: str) -> str | None:
    """Not globally routable (RFC 1918, ULA, CGNAT/tailnets, reserved): the LAN and internal services.
    Refused unless a rule names the host or the IP literal itself (DNS rebinding under `*`)."""
    ip = _checked(ip_text)
    return None if ip.is_global else "private network address"


@lru_cache(maxsize=1)
def host_addresses() -> frozenset[IPAddress]:
    """This machine's own interface addresses (from /proc; empty where /proc is unavailable)."""
    found: set[IPAddress] = set()
    try:
        lines = open("/proc/net/fib_trie", encoding="ascii").read().splitlines()
        for prev, line in zip(lines, lines[1:]):
            if "/32 host LOCAL" in line:
                addr = prev.strip().lstrip("|-+ ").strip()
                try:
                    found.add(ipaddress.ip_address(addr))
                except ValueError:
                    pass
    except OSError:
        pass
    try:
        for line in open("/proc/net/if_inet6", encoding="ascii"):
            raw = line.split()[0]
            found.add(ipaddress.ip_address(":".join(raw[i : i + 4] for i in range(0, 32, 4))))
    except (OSError, ValueError, IndexError):
        pass
    return frozenset(found)
