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


def forbidden_reason(ip_text: str) -> str | None:
    """Why this address may not be dialled (None = it may)."""
    ip: IPAddress = ipaddress.ip_address(ip_text)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
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
    ip: IPAddress = ipaddress.ip_address(ip_text)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
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
