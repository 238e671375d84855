"""What the Landlock backend's launcher adds where no namespace holds the command (launch.py --contain;
launch.c does the same): every capability dropped, SIGKILL on the parent's death, the seccomp program
loaded. Raw prctl/capset through ctypes; imports nothing from gtd, so the launcher stays small.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal

PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAP_AMBIENT = 1, 24, 38, 22, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
SYS_CAPSET = {"x86_64": 126, "aarch64": 91, "riscv64": 91, "ppc64le": 184, "s390x": 185}
LAST_CAP = 63

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg: int | ctypes.c_void_p = 0) -> int:
    return _libc.prctl(option, arg if isinstance(arg, ctypes.c_void_p) else ctypes.c_ulong(arg),
                       ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


def _fail() -> OSError:
    err = ctypes.get_errno()
    return OSError(err, os.strerror(err))


def die_with_parent() -> None:
    """SIGKILL when gtd's thread that started this process ends (kept across exec)."""
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise _fail()


def drop_capabilities() -> None:
    """No capability now or after exec, also for root: the bounding set emptied, then capset to nothing."""
    for cap in range(LAST_CAP + 1):
        if _prctl(PR_CAPBSET_DROP, cap) != 0 and ctypes.get_errno() not in (errno.EINVAL, errno.EPERM):
            raise _fail()
    _libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), ctypes.c_ulong(0), ctypes.c_ulong(0),
                ctypes.c_ulong(0))
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    number = SYS_CAPSET.get(os.uname().machine)
    if number is None or _libc.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)) != 0:
        raise _fail() if number is not None else OSError(errno.ENOSYS, "capset: unknown architecture")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def load_seccomp(fd: int) -> None:
    """Load the BPF program (raw `struct sock_filter` entries) read from `fd`, which is closed."""
    with os.fdopen(fd, "rb") as f:
        program = f.read(65536)
    if not program or len(program) % 8:
        raise OSError(errno.EINVAL, "seccomp program: not whole BPF instructions")
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise _fail()
    if _libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog), ctypes.c_ulong(0),
                   ctypes.c_ulong(0)) != 0:
        raise _fail()
