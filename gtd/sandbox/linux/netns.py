"""Sockets created inside the sandbox's network namespace, served from the host.

The usual design bind-mounts a host unix socket into the sandbox and runs a relay process there.
That needs AF_UNIX inside the sandbox, which the seccomp filter must refuse (host unix sockets are
an escape), and costs a process per run.

Instead, once bwrap has created its namespaces (it reports the child's pid on `--info-fd` and
waits on `--block-fd`), a short-lived forked child of gtd joins the sandbox's user and network
namespaces (where it holds CAP_NET_ADMIN, the namespace belonging to the sandbox's user
namespace) and, before the command starts:

- waits until bwrap has brought `lo` up (bwrap does that in its own child *concurrently* with
  reporting the pid: binding 127.0.0.1 earlier fails with EADDRNOTAVAIL, issue 9 class 13);
- routes every address to `lo` ("AnyIP": `local 0.0.0.0/0` and `local ::/0` in the local table),
  so a connection to any address stays inside the namespace, where gtd listens for it;
- creates the listeners: the proxy port (127.0.0.1:3128), the intercepted ports ([::]:443 ...,
  catching clients that ignore proxy variables), UDP port 53 (gtd's DNS answers), and the
  host-loopback forwards (127.0.0.1:PORT and [::1]:PORT);

and passes the fds back over a socketpair. Sockets keep the namespace they were created in, so
the host side accept()s sandbox connections on them directly. Nothing of gtd runs inside the
sandbox, and every socket disappears with the namespace.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
import time

from gtd.record import field, record

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
IP_FREEBIND = 15
NS_GET_USERNS = 0xB701  # ioctl on a namespace fd: the user namespace that owns it (Linux 4.9+)
SIOCGIFFLAGS = 0x8913
IFF_UP = 0x1
LO_WAIT_SECONDS = 20.0  # bwrap brings lo up within microseconds; this bound only turns a hang into an error
# How long gtd waits for the helper's sockets: past its own lo wait, so a helper that is merely slow answers,
# and one that is stuck (a lock another thread held at the fork) is killed and the sandbox does not start.
HELPER_REPLY_SECONDS = LO_WAIT_SECONDS + 10.0

_libc = None


@record(frozen=True)
class NamespaceLayout:
    """Which sockets to create inside a sandbox's network namespace."""

    proxy_port: int
    intercept_ports: tuple[int, ...] = ()
    dns: bool = False
    forward_ports: tuple[int, ...] = ()


@record
class NamespaceSockets:
    """The sockets created inside one sandbox's network namespace (owned by the host process)."""

    proxy: socket.socket
    intercept: list[socket.socket] = field(default_factory=list)
    dns: list[socket.socket] = field(default_factory=list)
    forwards: dict[int, list[socket.socket]] = field(default_factory=dict)

    def all(self) -> list[socket.socket]:
        return [self.proxy, *self.intercept, *self.dns, *(s for group in self.forwards.values() for s in group)]


def _load_libc():
    """libc through ctypes, for setns(2) (Python 3.11 has no os.setns). Loaded by the forked helper only, while
    it waits for the sandbox's pid: gtd itself never imports ctypes for it (~1.5 ms of every start)."""
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _setns(fd: int, nstype: int) -> int:
    if _load_libc().setns(fd, nstype) != 0:
        import ctypes

        return ctypes.get_errno()
    return 0


class NamespaceHelper:
    """The forked child that creates a sandbox's sockets, forked before the sandbox's pid is known: the
    fork and the child's first page faults (copy-on-write, ~1-5 ms on a busy machine) overlap bwrap's own
    start instead of following it. The child waits for the pid, then joins that sandbox's namespaces.
    close() (always called) reaps it; a child that never got a pid sees end of file and exits."""

    def __init__(self, layout: NamespaceLayout):
        self._parent, child = socket.socketpair()
        try:
            self.pid = os.fork()
        except BaseException:
            self._parent.close()
            child.close()
            raise
        if self.pid == 0:  # pragma: no cover - runs in the forked child
            code = 1
            try:
                _keep_only(child.fileno())
                _load_libc()  # while bwrap starts: the pid comes once it has
                _join_namespaces(_read_pid(child), child)
                sockets, kinds = _create(layout)
                socket.send_fds(child, [("K" + ",".join(kinds)).encode()], [s.fileno() for s in sockets])
                code = 0
            except BaseException as exc:  # noqa: BLE001 - report anything to the parent
                try:
                    child.sendall(f"E{_in_words(exc)}".encode())
                except OSError:
                    pass
            finally:
                os._exit(code)
        child.close()

    def sockets_for(self, pid: int) -> NamespaceSockets:
        """The layout's sockets inside the network namespace of `pid` (bwrap's child, still blocked)."""
        try:
            self._parent.settimeout(HELPER_REPLY_SECONDS)
            self._parent.sendall(b"%d\n" % pid)
            msg, fds, _, _ = socket.recv_fds(self._parent, 65536, 256)
        except TimeoutError:
            self._kill()
            raise OSError(f"could not open the proxy port inside the sandbox: the helper that creates it did not "
                          f"answer within {HELPER_REPLY_SECONDS:.0f} s") from None
        finally:
            self.close()
        if not msg.startswith(b"K") or not fds:
            for fd in fds:
                os.close(fd)
            raise OSError(f"could not open the proxy port inside the sandbox: {msg[1:].decode(errors='replace') or 'no reply'}")
        return _collect(msg[1:].decode().split(","), fds)

    def _kill(self) -> None:
        if self.pid:
            try:
                os.kill(self.pid, 9)  # SIGKILL: it is stuck, and close() must not wait for it
            except ProcessLookupError:
                pass

    def close(self) -> None:
        """Reap the child (it exits once it has answered, or at end of file when no pid came)."""
        if self._parent.fileno() >= 0:
            self._parent.close()
        if self.pid:
            os.waitpid(self.pid, 0)
            self.pid = 0


def open_namespace_sockets(pid: int, layout: NamespaceLayout) -> NamespaceSockets:
    """Create `layout`'s sockets inside the network namespace of `pid` (bwrap's child, still blocked)."""
    return NamespaceHelper(layout).sockets_for(pid)


def _in_words(exc: BaseException) -> str:  # pragma: no cover - forked child
    """What failed in the helper as a person reads it: an OSError's own words ("setns net: Operation not
    permitted"), not its repr ("PermissionError(1, 'setns net: ...')"); other exceptions with their type."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror if exc.filename is None else f"{exc.strerror}: {exc.filename}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _keep_only(fd: int) -> None:  # pragma: no cover - forked child
    """Close every descriptor but stdio and `fd`, first thing in the forked helper. The fork copied all of
    gtd's: another sandbox's pipe write ends among them (its --ro-bind-data, its info pipe), and bwrap's
    child reads such a pipe to end of file while it builds its root, so a helper holding a copy stalled
    that sandbox mid-setup for as long as the helper lived (its mount check then found a path missing)."""
    os.closerange(3, fd)
    os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))


def _read_pid(conn: socket.socket) -> int:  # pragma: no cover - forked child
    """The sandbox's pid, as NamespaceHelper.sockets_for sends it (a line); EOFError when none comes."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            raise EOFError("no sandbox to join")
        data += chunk
    return int(data)


def listener_in_namespace(pid: int, port: int) -> socket.socket:
    """Only a TCP listener on 127.0.0.1:port inside the network namespace of `pid`."""
    return open_namespace_sockets(pid, NamespaceLayout(proxy_port=port)).proxy


def _join_namespaces(pid: int, report: socket.socket) -> None:  # pragma: no cover - forked child
    """Join the network namespace of `pid` by way of the user namespace that *owns* it. That is not always
    /proc/PID/ns/user: bwrap run by a non-root user with `--dev` maps the user to 0 while it mounts devpts,
    then moves the command into a second, nested user namespace with the real uid. Joining that nested one
    gives no capability over the network namespace, and setns(net) failed with EPERM for every sandbox
    with a network layer. (As root, CAP_SYS_ADMIN in the initial namespace covers any network namespace.)"""
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _same_namespace(net, "/proc/self/ns/net"):
            # Not a sandbox (its pid reused by a process of the host's): as root the rest would succeed, and
            # the listeners and the route of every address to `lo` would go into the host's own network.
            raise OSError(errno.EPERM, f"process {pid} has no network namespace of its own: not a sandbox")
        try:
            owner = fcntl.ioctl(net, NS_GET_USERNS)
        except OSError as exc:
            if exc.errno != errno.ENOTTY:
                raise OSError(exc.errno, f"owner of the sandbox's network namespace: {os.strerror(exc.errno)}") from None
            owner = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)  # a kernel before 4.9
        err = _setns(owner, CLONE_NEWUSER)
        os.close(owner)
        if err and err != errno.EINVAL:  # EINVAL: it is already ours (bwrap without a user namespace)
            raise OSError(err, f"setns user: {os.strerror(err)}")
        err = _setns(net, CLONE_NEWNET)
        if err:
            raise OSError(err, f"setns net: {os.strerror(err)}")
    finally:
        os.close(net)


def _same_namespace(fd: int, path: str) -> bool:  # pragma: no cover - forked child
    here, there = os.fstat(fd), os.stat(path)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _loopback_ready(probe: socket.socket) -> bool:  # pragma: no cover - forked child
    """`lo` is up and 127.0.0.1 is assignable. The link is flagged up *before* the kernel has added
    its local routes, so in that window a bind to 127.0.0.1 fails with EADDRNOTAVAIL: probe it."""
    flags = struct.unpack("16sH", fcntl.ioctl(probe, SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0))[:18])[1]
    if not flags & IFF_UP:
        return False
    test = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        test.bind(("127.0.0.1", 0))
        return True
    except OSError as exc:
        if exc.errno == errno.EADDRNOTAVAIL:
            return False
        raise
    finally:
        test.close()


def _wait_for_loopback() -> None:  # pragma: no cover - forked child
    """Block until bwrap has configured `lo` (it adds 127.0.0.1, then sets the link up, concurrently
    with reporting its pid to gtd)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        deadline = time.monotonic() + LO_WAIT_SECONDS
        delay = 0.0002
        while not _loopback_ready(probe):
            if time.monotonic() > deadline:
                raise OSError(errno.ETIMEDOUT, "the sandbox's loopback interface never came up")
            time.sleep(delay)
            # At most 1 ms apart (a probe costs ~20 us): doubling up to 10 ms found an `lo` that came up
            # after 3 ms (bwrap's child descheduled on a busy machine) only at ~6 ms.
            delay = min(delay * 2, 0.001)
    finally:
        probe.close()


def _route_everything_to_loopback() -> bool:  # pragma: no cover - forked child
    """AnyIP: `ip route add local 0.0.0.0/0 dev lo table local` (and ::/0). False if IPv6 is unavailable."""
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
    ipv6 = True
    try:
        nl.bind((0, 0))
        for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
            # struct rtmsg: family, dst_len, src_len, tos, table=LOCAL(255), protocol=BOOT(3),
            # scope=HOST(254), type=LOCAL(2), flags; then RTA_OIF(4) = ifindex of lo (1).
            body = struct.pack("BBBBBBBBI", family, 0, 0, 0, 255, 3, 254, 2, 0) + struct.pack("HHI", 8, 4, 1)
            flags = 0x1 | 0x4 | 0x400 | 0x200  # REQUEST | ACK | CREATE | EXCL
            nl.send(struct.pack("IHHII", 16 + len(body), 24, flags, seq, 0) + body)  # RTM_NEWROUTE
            reply = nl.recv(4096)
            err = -struct.unpack("i", reply[16:20])[0] if struct.unpack("H", reply[4:6])[0] == 2 else 0
            if err and err != errno.EEXIST:
                if family == socket.AF_INET6 and err in (errno.EAFNOSUPPORT, errno.EOPNOTSUPP, errno.ENODEV):
                    ipv6 = False
                    continue
                raise OSError(err, f"cannot route addresses to the sandbox's loopback: {os.strerror(err)}")
    finally:
        nl.close()
    return ipv6


def _tcp_listener(family: int, address: str, port: int) -> socket.socket:  # pragma: no cover - forked child
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IP, IP_FREEBIND, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if address == "::" else 1)
    s.bind((address, port))
    s.listen(128)
    return s


def _create(layout: NamespaceLayout) -> tuple[list[socket.socket], list[str]]:  # pragma: no cover - forked child
    _wait_for_loopback()
    sockets: list[socket.socket] = []
    kinds: list[str] = []
    sockets.append(_tcp_listener(socket.AF_INET, "127.0.0.1", layout.proxy_port))
    kinds.append("proxy")
    if not (layout.intercept_ports or layout.dns or layout.forward_ports):
        return sockets, kinds
    ipv6 = _route_everything_to_loopback() if (layout.intercept_ports or layout.dns) else socket.has_ipv6
    for port in layout.intercept_ports:
        # One dual-stack listener per port catches a direct connection to any address on that port.
        sockets.append(_tcp_listener(socket.AF_INET6, "::", port) if ipv6 else _tcp_listener(socket.AF_INET, "0.0.0.0", port))
        kinds.append(f"intercept:{port}")
    if layout.dns:
        for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
            if family == socket.AF_INET6 and not ipv6:
                continue
            u = socket.socket(family, socket.SOCK_DGRAM)
            if family == socket.AF_INET6:
                u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            u.bind((address, 53))  # any nameserver address resolv.conf names is local here (AnyIP)
            sockets.append(u)
            kinds.append("dns")
    for port in layout.forward_ports:
        for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            if family == socket.AF_INET6 and not ipv6:
                continue
            sockets.append(_tcp_listener(family, address, port))
            kinds.append(f"forward:{port}")
    return sockets, kinds


def _collect(kinds: list[str], fds: list[int]) -> NamespaceSockets:
    made = [socket.socket(fileno=fd) for fd in fds]
    result = NamespaceSockets(proxy=made[0])
    for kind, sock in zip(kinds[1:], made[1:]):
        if kind.startswith("intercept:"):
            result.intercept.append(sock)
        elif kind == "dns":
            result.dns.append(sock)
        elif kind.startswith("forward:"):
            result.forwards.setdefault(int(kind.split(":")[1]), []).append(sock)
    return result
