"""Landlock: the kernel's own write restriction, a second layer under bubblewrap's mounts.

Read-only bind mounts stop writes to regular files and directories, but not to FIFOs and device
nodes: opening a host FIFO for writing through a read-only mount succeeds, and its reader on the
host gets the data. Landlock checks every open, create, rename, link and truncate against the set
of paths allowed for writing, whatever the file's type, so the sandboxed command can write *only*
beneath the policy's writable paths (and its private /tmp, /dev and /proc). It cannot take a
protected path back out of a writable directory (its rights are inherited by whole hierarchies);
bubblewrap's read-only binds still do that.

Reads and execution are not restricted here: they stay the mounts' business. Rules are applied by
the launcher (sandbox/linux/launch.py) inside the sandbox, after bubblewrap has finished mounting (a
Landlock-restricted process may not mount) and right before the command is executed.

Raw syscalls through ctypes; this module imports nothing from gtd so the launcher stays small.
"""

from __future__ import annotations

import ctypes
import os

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, READ_FILE, READ_DIR = 1 << 0, 1 << 2, 1 << 3
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR  # handled only by the Landlock backend (contain)
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

WRITE_FILE = 1 << 1
REMOVE_DIR, REMOVE_FILE = 1 << 4, 1 << 5
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = (1 << n for n in range(6, 13))
REFER = 1 << 13  # ABI 2: renames and links across directories
TRUNCATE = 1 << 14  # ABI 3

FILE_RIGHTS = WRITE_FILE | TRUNCATE  # the only write rights that make sense on a non-directory


def write_rights(abi: int) -> int:
    """Every write-like right this ABI knows: what the ruleset handles, and what a writable dir gets."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the uapi header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = None


def _syscall(number: int, *args) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI, or 0 when it has none (too old, not built in, or off at boot)."""
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:  # ENOSYS: not built; EOPNOTSUPP: not enabled (lsm=); seccomp refusing it elsewhere
        return 0


def restrict_writes(writable: list[str], abi: int, *, reads: list[str] | None = None,
                    connect: list[int] = ()) -> None:
    """Allow writes only beneath `writable` (directories) and to `writable` (files), for this process
    and everything it starts. A path that does not exist is skipped. Raises OSError when the kernel
    refuses (the caller fails closed).

    `reads` (the Landlock backend, launch.py --contain): reads and execution too are allowed only beneath
    `reads` and `writable`; TCP connect (ABI 4+) only to the `connect` ports, TCP bind to none; signals
    and abstract unix sockets (ABI 6+) reach only processes inside this sandbox."""
    contain = reads is not None
    writes = write_rights(abi)
    read = READ_RIGHTS if contain else 0
    fields = [writes | read]
    if contain and abi >= 4:
        fields.append(NET_BIND_TCP | NET_CONNECT_TCP)
    if contain and abi >= 6:
        fields.append(SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL)
    attr = (ctypes.c_uint64 * len(fields))(*fields)  # struct landlock_ruleset_attr; an older size is accepted
    ruleset = _syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8 * len(fields)), ctypes.c_uint32(0))
    try:
        for paths, rights in ((writable, writes | read), (reads or [], read)):
            for path in paths:
                _add_path(ruleset, path, rights)
        if len(fields) > 1:
            for port in connect:
                rule = _NetPort(NET_CONNECT_TCP, port)
                _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_NET_PORT), ctypes.byref(rule), ctypes.c_uint32(0))
        _prctl_no_new_privs()
        _syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
        rule = _PathBeneath(rights if is_dir else rights & (FILE_RIGHTS | READ_FILE | EXECUTE), fd)
        _syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
    finally:
        os.close(fd)


def _prctl_no_new_privs() -> None:
    """Landlock requires no_new_privs (bubblewrap already set it for seccomp; setting it twice is fine)."""
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
