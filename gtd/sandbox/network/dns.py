"""DNS inside the sandbox: every name gets a stand-in address, and nothing is resolved upstream.

Clients that ignore proxy variables (Node's fetch, Java, ssh, ...) look names up and connect to
the address. gtd answers each A query with an address from 198.18.0.0/15 (reserved for
benchmarking, never a real destination) that stands for that name for the session. The
namespace routes every address to its own loopback, where gtd's intercepted-port listeners
accept the connection; the address it was sent to maps back to the name, and the proxy then
decides by name exactly as for a CONNECT request.

Nothing is resolved at lookup time, so a lookup carries no data out of the sandbox (no DNS
exfiltration), and a name no rule allows still gets an address (the refusal, with its reason,
happens when something connects). AAAA and other types get an empty answer.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading

from gtd.sandbox.policy.domains import normalise_host, valid_host

STAND_IN_NETWORK = ipaddress.ip_network("198.18.0.0/15")
TTL = 60
IP_PKTINFO = 8
IPV6_RECVPKTINFO = 49
IPV6_PKTINFO = 50
QTYPE_A = 1
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP = 0, 1, 2, 3, 4


class StandInNames:
    """The session's name <-> stand-in address table (shared by every command of a session)."""

    def __init__(self, network: ipaddress.IPv4Network = STAND_IN_NETWORK):
        self._network = network
        self._next = 1
        self._by_name: dict[str, str] = {}
        self._by_address: dict[str, str] = {}
        self._lock = threading.Lock()

    def address_for(self, name: str) -> str | None:
        """The stand-in address for `name` (the same one every time); None once the range is used up."""
        with self._lock:
            if name in self._by_name:
                return self._by_name[name]
            if self._next >= self._network.num_addresses - 1:
                return None
            address = str(self._network[self._next])
            self._next += 1
            self._by_name[name] = address
            self._by_address[address] = name
            return address

    def name_for(self, address: str) -> str | None:
        with self._lock:
            return self._by_address.get(address)


def answer(query: bytes, names: StandInNames) -> bytes | None:
    """The reply to one DNS query packet (None: not worth a reply)."""
    if len(query) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", query[:6])
    if flags & 0x8000:  # a response, not a query
        return None
    opcode = (flags >> 11) & 0xF
    rd = flags & 0x0100
    parsed = _question(query) if qdcount == 1 else None
    if parsed is None:
        return struct.pack("!HHHHHH", qid, 0x8000 | (opcode << 11) | rd | FORMERR, 0, 0, 0, 0)
    labels, qtype, qclass, end = parsed
    question = query[12:end]
    if opcode != 0:
        return _reply(qid, rd, NOTIMP, question)
    try:
        name = normalise_host(".".join(label.decode("ascii") for label in labels))
    except UnicodeDecodeError:
        return _reply(qid, rd, NXDOMAIN, question)
    if not name or not valid_host(name):
        return _reply(qid, rd, NXDOMAIN, question)
    if qtype != QTYPE_A or qclass != 1:
        return _reply(qid, rd, NOERROR, question)  # no data of that type (AAAA, MX, TXT, ...)
    if name == "localhost" or name.endswith(".localhost"):
        address = "127.0.0.1"
    else:
        address = names.address_for(name)
        if address is None:
            return _reply(qid, rd, SERVFAIL, question)
    record = b"\xc0\x0c" + struct.pack("!HHIH", QTYPE_A, 1, TTL, 4) + socket.inet_aton(address)
    return _reply(qid, rd, NOERROR, question, record)


def _reply(qid: int, rd: int, rcode: int, question: bytes, record: bytes = b"") -> bytes:
    flags = 0x8000 | 0x0400 | rd | 0x0080 | rcode  # response, authoritative, recursion available
    return struct.pack("!HHHHHH", qid, flags, 1, 1 if record else 0, 0, 0) + question + record


def _question(packet: bytes) -> tuple[list[bytes], int, int, int] | None:
    labels: list[bytes] = []
    pos = 12
    while True:
        if pos >= len(packet):
            return None
        length = packet[pos]
        pos += 1
        if length == 0:
            break
        if length > 63 or pos + length > len(packet):  # compression pointers are not valid in a question
            return None
        labels.append(packet[pos : pos + length])
        pos += length
    if pos + 4 > len(packet):
        return None
    qtype, qclass = struct.unpack("!HH", packet[pos : pos + 4])
    return labels, qtype, qclass, pos + 4


class DnsResponder:
    """Answers queries arriving on a UDP socket bound to port 53 inside the namespace, from the
    address they were sent to (resolvers drop replies from any other address)."""

    def __init__(self, sock: socket.socket, names: StandInNames):
        self.sock = sock
        self.names = names
        self.v6 = sock.family == socket.AF_INET6
        if self.v6:
            sock.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVPKTINFO, 1)
        else:
            sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)

    def handle_one(self) -> None:
        """Read one query (the socket is readable) and reply to it."""
        try:
            data, ancdata, _, peer = self.sock.recvmsg(4096, socket.CMSG_SPACE(64))
        except (BlockingIOError, InterruptedError):
            return
        reply = answer(data, self.names)
        if reply is None:
            return
        control = []
        for level, kind, value in ancdata:
            if not self.v6 and level == socket.IPPROTO_IP and kind == IP_PKTINFO and len(value) >= 12:
                # struct in_pktinfo {int ifindex; in_addr spec_dst; in_addr addr}: reply from addr.
                control = [(socket.IPPROTO_IP, IP_PKTINFO, struct.pack("i4s4s", 0, value[8:12], b"\0" * 4))]
            elif self.v6 and level == socket.IPPROTO_IPV6 and kind == IPV6_PKTINFO and len(value) >= 20:
                control = [(socket.IPPROTO_IPV6, IPV6_PKTINFO, value[:16] + struct.pack("i", 0))]
        try:
            self.sock.sendmsg([reply], control, 0, peer)
        except OSError:
            pass
