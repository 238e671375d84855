"""The "relay inside the namespace": a listening socket created in the sandbox's network namespace.

The usual design bind-mounts a host unix socket into the sandbox and runs a relay process there
that forwards 127.0.0.1:PORT to it. That needs AF_UNIX inside the sandbox, which the seccomp filter
must refuse (host unix sockets are an escape), and costs a process per run.

Instead, once bwrap has created its namespaces (it reports the child's pid on `--info-fd` and
waits on `--block-fd`), a short-lived forked child of gtd joins the sandbox's user and network
namespaces, binds a TCP socket to 127.0.0.1:PORT *there*, listens, and passes the fd back over a
socketpair. The host-side proxy then accept()s sandbox connections directly on that fd: sockets
keep the namespace they were created in. Nothing runs inside the sandbox, no unix socket is
visible to it, and the listener disappears with the namespace.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_libc = None


def _setns(fd: int, nstype: int) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, nstype) != 0:
        return ctypes.get_errno()
    return 0


def listener_in_namespace(pid: int, port: int, backlog: int = 128) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:port inside the network namespace of `pid`."""
    parent, child = socket.socketpair()
    try:
        child_pid = os.fork()
        if child_pid == 0:  # pragma: no cover - runs in the forked child
            code = 1
            try:
                parent.close()
                for ns, flag in (("user", CLONE_NEWUSER), ("net", CLONE_NEWNET)):
                    fd = os.open(f"/proc/{pid}/ns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
                    err = _setns(fd, flag)
                    os.close(fd)
                    # EINVAL on the user namespace: it is already ours (e.g. bwrap without userns).
                    if err and not (ns == "user" and err == errno.EINVAL):
                        child.sendall(f"E{ns}: {os.strerror(err)}".encode())
                        os._exit(1)
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
                s.listen(backlog)
                socket.send_fds(child, [b"K"], [s.fileno()])
                code = 0
            except BaseException as exc:  # noqa: BLE001 - report anything to the parent
                try:
                    child.sendall(f"E{exc!r}".encode())
                except OSError:
                    pass
            finally:
                os._exit(code)
        child.close()
        msg, fds, _, _ = socket.recv_fds(parent, 1024, 1)
        os.waitpid(child_pid, 0)
    finally:
        parent.close()
    if not fds:
        raise OSError(f"could not open the proxy port inside the sandbox: {msg[1:].decode(errors='replace') or 'no reply'}")
    return socket.socket(fileno=fds[0])
