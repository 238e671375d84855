"""The seccomp filter applied to every sandboxed command, compiled by libseccomp (pyseccomp).

Why each rule:
- socket() only for AF_INET, AF_INET6 and AF_NETLINK. AF_UNIX: bind mounts do not stop connecting to
  host unix sockets (docker.sock, ssh-agent, dbus). AF_VSOCK is not network-namespaced (it reaches the
  hypervisor host and other VMs); packet/XDP/ALG/... sockets are kernel attack surface with no use here.
  The family is compared as a whole 64-bit register: anything but exactly 2, 10 or 16 is refused, so
  upper bits (which the kernel drops from an `int` argument) cannot smuggle AF_UNIX past the filter.
  socketpair() stays allowed: it reaches nothing outside and Node/libuv use it for child stdio.
- io_uring_*: a second syscall path around these rules.
- unshare/setns/mount/...: creating namespaces or mounts could undo the read-only binds.
  clone()/clone3 with namespace flags likewise (clone3 gets ENOSYS so libc falls back to clone()).
- ptrace/process_vm_*: reading or steering other sandboxed processes (e.g. the agent's own memory).
- ioctl TIOCSTI/TIOCLINUX: injecting keystrokes into a terminal.
- keyctl/add_key/request_key, bpf, perf_event_open, userfaultfd: kernel attack surface, no use here.
- set-id modes (S_ISUID/S_ISGID) in chmod/fchmod/fchmodat/fchmodat2, in open/openat/creat when they
  create (O_CREAT or O_TMPFILE), and in mknod/mknodat: a set-id file the sandbox leaves in a writable
  path keeps its bit on the host, where anyone who runs it gets the sandbox user's (or root's) identity.
  openat2 passes its mode in a struct the filter cannot read: ENOSYS, so libc falls back to openat.
The filter is exported as BPF bytes once per session and handed to bwrap on `--seccomp FD`.

The Landlock backend (no network namespace: linux/landlock_backend.py) adds `contained_sockets`: an
INET/INET6 socket must be a plain TCP stream (type SOCK_STREAM, protocol 0 or IPPROTO_TCP), since
Landlock's network rules cover TCP only: UDP, raw, SCTP and MPTCP sockets are refused at socket(),
and TCP Fast Open's connect-by-sendto (MSG_FASTOPEN) too, so every connection goes through connect().
"""

from __future__ import annotations

import errno
import os
import socket

DENIED_SYSCALLS = (
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "unshare",
    "setns",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
)

CLONE_NAMESPACE_FLAGS = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
    | 0x00000080  # CLONE_NEWTIME
)
ALLOWED_SOCKET_FAMILIES = (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK)
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
SETID_BITS = (0o4000, 0o2000)  # S_ISUID, S_ISGID
# (syscall, index of its mode argument)
CHMOD_CALLS = (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2), ("creat", 1), ("mknod", 1), ("mknodat", 2))
# (syscall, index of its flags argument, index of its mode argument): the mode counts only when creating.
OPEN_CALLS = (("open", 1, 2), ("openat", 2, 3))
CREATING_FLAGS = (os.O_CREAT, 0x400000)  # O_CREAT, __O_TMPFILE (O_TMPFILE without O_DIRECTORY)
UNIFIED_NUMBERS = {"fchmodat2": 452}  # syscalls added after the per-arch tables were unified (Linux 5.x+)


SOCK_STREAM = 1
SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK / SOCK_CLOEXEC live above it
TCP_PROTOCOLS = (0, 6)  # the default for a stream, IPPROTO_TCP
MSG_FASTOPEN = 0x20000000
# (syscall, index of its flags argument)
SEND_CALLS = (("sendto", 3), ("sendmsg", 2), ("sendmmsg", 3))


def compile_filter(contained_sockets: bool = False) -> bytes:
    """The BPF program (raw `struct sock_filter` array) for the current architecture."""
    import pyseccomp as sc  # ctypes over libseccomp; imported here so the CLI's other paths skip it

    eperm = sc.ERRNO(errno.EPERM)
    f = sc.SyscallFilter(sc.ALLOW)
    for low, high in _gaps(ALLOWED_SOCKET_FAMILIES):
        if high is None:
            f.add_rule(eperm, "socket", sc.Arg(0, sc.GT, low - 1))  # low.. up to 2**64-1
        elif low == high:
            f.add_rule(eperm, "socket", sc.Arg(0, sc.EQ, low))
        elif low == 0:
            f.add_rule(eperm, "socket", sc.Arg(0, sc.LT, high + 1))
        else:
            for family in range(low, high + 1):
                f.add_rule(eperm, "socket", sc.Arg(0, sc.EQ, family))
    for name in DENIED_SYSCALLS:
        try:
            f.add_rule(eperm, name)
        except OSError:  # not a syscall on this architecture
            pass
    for flag in _bits(CLONE_NAMESPACE_FLAGS):
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for request in (TIOCSTI, TIOCLINUX):
        f.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    _refuse_setid_modes(f, sc, eperm)
    if contained_sockets:
        _tcp_streams_only(f, sc, eperm)
    with os.fdopen(os.memfd_create("gtd-seccomp"), "w+b") as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def _refuse_setid_modes(f, sc, eperm) -> None:
    """EPERM for any mode carrying S_ISUID or S_ISGID (see the module docstring)."""
    for bit in SETID_BITS:
        for name, mode_arg in CHMOD_CALLS:
            _add(f, eperm, name, sc.Arg(mode_arg, sc.MASKED_EQ, bit, bit))
        for name, flags_arg, mode_arg in OPEN_CALLS:
            for flag in CREATING_FLAGS:
                _add(f, eperm, name, sc.Arg(flags_arg, sc.MASKED_EQ, flag, flag), sc.Arg(mode_arg, sc.MASKED_EQ, bit, bit))
    _add(f, sc.ERRNO(errno.ENOSYS), "openat2")


def _tcp_streams_only(f, sc, eperm) -> None:
    """EPERM for an INET/INET6 socket that is not a TCP stream, and for MSG_FASTOPEN (module docstring)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        for kind in range(SOCK_TYPE_MASK + 1):
            if kind != SOCK_STREAM:
                f.add_rule(eperm, "socket", sc.Arg(0, sc.EQ, family), sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind))
        for protocol in range(1, max(TCP_PROTOCOLS)):
            f.add_rule(eperm, "socket", sc.Arg(0, sc.EQ, family), sc.Arg(2, sc.EQ, protocol))
        f.add_rule(eperm, "socket", sc.Arg(0, sc.EQ, family), sc.Arg(2, sc.GT, max(TCP_PROTOCOLS)))
    for name, flags_arg in SEND_CALLS:
        _add(f, eperm, name, sc.Arg(flags_arg, sc.MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN))


def _add(f, action, name: str, *args) -> None:
    try:
        f.add_rule(action, name, *args)
    except (OSError, ValueError, RuntimeError):  # not a syscall on this architecture (open, creat on arm64)
        if name in UNIFIED_NUMBERS:  # newer than this libseccomp: its number is the same on every arch
            f.add_rule(action, UNIFIED_NUMBERS[name], *args)


def _gaps(allowed) -> list[tuple[int, int | None]]:
    """The refused ranges around the allowed values: [(0, 1), (3, 9), (11, 15), (17, None)] for 2, 10, 16."""
    gaps, start = [], 0
    for value in sorted(allowed):
        if value > start:
            gaps.append((start, value - 1))
        start = value + 1
    return gaps + [(start, None)]


def _bits(mask: int) -> list[int]:
    return [1 << i for i in range(mask.bit_length()) if mask & (1 << i)]


def filter_fd(program: bytes) -> int:
    """A readable fd holding the program, for bwrap `--seccomp FD` (the program is < 64 KiB)."""
    from gtd.sandbox.linux.bwrap import data_fd

    return data_fd(program)


def cached_filter(contained_sockets: bool = False) -> bytes:
    """compile_filter(), remembered in gtd's state directory (which the sandbox cannot write).

    Loading libseccomp through ctypes costs more than the rest of a sandbox start, while the program
    (about 1 KB) is fixed by this module's rules, the bindings' code and the CPU architecture: those
    key the cache, so a change to any of them compiles afresh. A damaged entry is compiled again."""
    return cached_program(__file__, lambda: compile_filter(contained_sockets),
                          valid=lambda program: len(program) % 8 == 0, variant=f"contained={contained_sockets}")


def cached_program(source: str, compile, valid, variant: str = "") -> bytes:
    """`compile()`'s bytes, remembered in gtd's state directory keyed by `source` (the module that holds
    the rules), the bindings' code and the CPU architecture (cached_filter's reasons); `valid` checks
    a remembered entry; `variant` tells apart programs one module compiles several ways."""
    import importlib.util
    import sys
    from pathlib import Path

    from gtd.digest import sha256
    from gtd.paths import user_state_dir

    key = sha256(Path(source).read_bytes())
    spec = importlib.util.find_spec("pyseccomp")
    if spec is not None and spec.origin:
        key.update(Path(spec.origin).read_bytes())
    key.update(f"{os.uname().machine} {sys.maxsize} {sys.byteorder} {variant}".encode())
    path = user_state_dir() / "cache" / "seccomp" / f"{key.hexdigest()}.bpf"
    try:
        program = path.read_bytes()
        if program and valid(program):  # e.g. whole `struct sock_filter` entries
            return program
    except OSError:
        pass
    program = compile()
    import tempfile  # here: a cached filter (every start but the first) writes nothing

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(program)
        os.replace(tmp, path)
    except OSError:
        pass  # not cached: the next start compiles again
    return program
