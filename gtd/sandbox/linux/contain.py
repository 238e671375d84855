"""What the Landlock backend's launcher adds where no namespace holds the command (launch.py --contain;
launch.c does the same): every capability dropped, SIGKILL on the parent's death, the seccomp program
loaded, and `supervise`: the launcher stays the command's parent and subreaper, as a PID namespace's
init would be. Raw prctl/capset through ctypes; imports nothing from gtd, so the launcher stays small.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal

PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAP_AMBIENT = 1, 24, 38, 22, 47
PR_SET_CHILD_SUBREAPER = 36
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


def supervise(command: list[str], parent: int, before_exec=None, inherited: tuple[int, ...] = ()) -> int:
    """Run `command` as a child and wait for it; then kill whatever it left running (orphans come here: the
    subreaper), and all of it when gtd dies (SIGTERM, this process's parent-death signal). Returns the
    command's exit status (a signal's death is re-raised on this process). `before_exec` runs in the child
    (the write watch goes on there); `inherited` are its descriptors, closed here once it is forked."""
    stopped: list[int] = []
    if _prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise _fail()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda n, _frame: stopped.append(n))
    if _prctl(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        raise _fail()
    if os.getppid() != parent:
        return 126  # gtd died before that signal was set
    child = os.fork()
    if child == 0:
        try:
            for signum in (signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if before_exec is not None:
                before_exec()
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"gtd sandbox: cannot run {command[0]}: {exc.strerror}\n".encode())
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    for fd in inherited:
        os.close(fd)
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP):
        signal.signal(signum, signal.SIG_IGN)  # the terminal's keys are the command's (gtd signals the group)
    status = 0
    while not stopped:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if done == child:
            break
    _kill_children()
    if stopped:
        return 128 + stopped[0]
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else signal.SIGKILL
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return 128 + signum


def _kill_children() -> None:
    """SIGKILL every child until none is left, reaping each (their children come here next: the subreaper)."""
    path = f"/proc/self/task/{os.getpid()}/children"
    for _ in range(10000):
        try:
            with open(path) as f:
                pids = [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            pids = []
        kill_and_reap(pids)
        if not pids:
            return


def kill_and_reap(pids: list[int]) -> None:
    """SIGKILL each of these children, then reap each (a child already gone is skipped)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass
