"""The launcher bubblewrap executes inside the sandbox: apply the kernel layers that must be set up
from inside, then exec the command (same pid, same environment).

    python -I -S launch.py [--hold FD] [--landlock ABI --write PATH ...] [--nproc N] [--data BYTES]
        [--watch-socket FD --watch-filter FD]
        [--contain 1 --read PATH ... --connect PORT ... --seccomp FD --block FD] -- CMD ARG...

- Landlock (sandbox/linux/landlock.py): only after bubblewrap has mounted everything, since a restricted
  process may not mount. The terminal the command inherited (if any) stays writable through
  /dev/stdout and friends: it is the person's own terminal, already open for writing.
- RLIMIT_NPROC, when no cgroup bounds the processes: set here, inside the user namespace, the kernel
  counts it per (user namespace, uid), so only the sandbox's own tasks count, not every process the
  user runs on the host. (It does not apply to host root, which the kernel exempts.)
- RLIMIT_DATA, when no cgroup bounds memory: per process. RLIMIT_AS would break runtimes that
  reserve large address ranges up front (Node, the JVM, Go); RLIMIT_DATA counts only writable
  private memory.

- --hold FD (under bwrap, sandbox/linux/start_hold.py): say the launcher runs, one byte on that socket, and
  wait for gtd's one byte back before anything else; end of file (gtd is gone) exits 126, so the command
  never runs without gtd.
- The write watch (sandbox/linux/write_watch.py): a notifying seccomp filter, installed last, its listener
  sent to gtd; the command never holds it. Reporting only: failing to install it is not fatal.
- --contain: the Landlock backend, where no bubblewrap and no namespace holds the command (launch.c's
  header says what it adds: reads and TCP by Landlock, no capabilities, parent-death signal, seccomp,
  and the launcher staying the command's parent and subreaper, as a PID namespace's init would). The write
  watch goes on there in the command's own process, after the launcher forked it, right before exec.

Failing to apply a layer that was asked for is fatal (exit 126): the sandbox fails closed.
Started with `-I -S` (no site, no environment, no current directory on sys.path) to keep it a
few milliseconds and out of the workspace's reach.
"""

import os
import resource
import sys

FAILED = 126


def _parse(argv):
    opts = {"write": [], "read": [], "connect": [], "landlock": 0, "nproc": 0, "data": 0, "contain": 0,
            "seccomp": None, "block": None, "watch-socket": 0, "watch-filter": 0, "hold": None}
    i = 0
    while i < len(argv) and argv[i] != "--":
        key = argv[i][2:]
        value = argv[i + 1]
        if key in ("write", "read"):
            opts[key].append(value)
        elif key == "connect":
            opts[key].append(int(value))
        else:
            opts[key] = int(value)
        i += 2
    return opts, argv[i + 1:]


def _terminals():
    """The inherited standard streams that are terminals, as paths Landlock can hold a rule for."""
    return [f"/proc/self/fd/{fd}" for fd in (0, 1, 2) if os.isatty(fd)]


def _watch_writes(sock, filter_fd):
    """Install the notifying filter read from `filter_fd` and send its listener over `sock` (launch.c's)."""
    import ctypes
    import socket

    with os.fdopen(filter_fd, "rb") as f:
        program = f.read()
    listener = -1
    libc = ctypes.CDLL(None, use_errno=True)
    if program and len(program) % 8 == 0 and libc.prctl(38, 1, 0, 0, 0) == 0:  # PR_SET_NO_NEW_PRIVS

        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

        prog = Prog(len(program) // 8, program)
        listener = libc.syscall(317 if os.uname().machine == "x86_64" else 277, 1, 8, ctypes.byref(prog))  # seccomp(SET_MODE_FILTER, NEW_LISTENER)
    with socket.socket(fileno=sock) as s:
        if listener >= 0:
            try:
                socket.send_fds(s, [b"\0"], [listener])
            except OSError:
                pass
            os.close(listener)


def _hold(fd):
    """Whether gtd let this launcher go on (launch.c's hold): False when gtd is gone."""
    import socket

    try:
        with socket.socket(fileno=fd) as s:
            s.send(b"r", socket.MSG_NOSIGNAL)
            return s.recv(1) == b"1"
    except OSError:
        return False


def _watch_quietly(sock, filter_fd):
    """The write watch reports only: failing to install it leaves writes unwatched, nothing more."""
    try:
        _watch_writes(sock, filter_fd)
    except (OSError, ValueError):
        pass


def main(argv):
    opts, command = _parse(argv)
    if not command:
        sys.stderr.write("gtd sandbox launcher: no command\n")
        return FAILED
    if opts["hold"] is not None and not _hold(opts["hold"]):
        return FAILED
    try:
        if opts["contain"] or opts["seccomp"] is not None:
            sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
            from gtd.sandbox.linux import contain
        parent = os.getppid()
        if opts["contain"]:
            if not opts["landlock"] or opts["seccomp"] is None:
                raise ValueError("--contain needs --landlock and --seccomp")
            contain.die_with_parent()
        if opts["block"] is not None:  # gtd writes one byte once this process is in its cgroup
            if os.read(opts["block"], 1) != b"1":
                return FAILED
            os.close(opts["block"])
        if opts["contain"] and os.getppid() != parent:
            return FAILED  # gtd died before the parent-death signal was set
        if opts["nproc"]:
            resource.setrlimit(resource.RLIMIT_NPROC, (opts["nproc"], opts["nproc"]))
        if opts["data"]:
            resource.setrlimit(resource.RLIMIT_DATA, (opts["data"], opts["data"]))
        if opts["landlock"]:
            sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
            from gtd.sandbox.linux.landlock import restrict_writes

            restrict_writes(opts["write"] + _terminals(), opts["landlock"],
                            reads=opts["read"] if opts["contain"] else None, connect=opts["connect"])
        if opts["contain"]:
            contain.drop_capabilities()
        if opts["seccomp"] is not None:
            contain.load_seccomp(opts["seccomp"])
        if opts["contain"]:
            watch = (opts["watch-socket"], opts["watch-filter"]) if opts["watch-socket"] and opts["watch-filter"] else ()
            return contain.supervise(command, parent, (lambda: _watch_quietly(*watch)) if watch else None, watch)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"gtd sandbox: cannot apply the kernel limits inside the sandbox: {exc} "
                         "(`gtd doctor` checks which layers this machine gives again)\n")
        return FAILED
    if opts["watch-socket"] and opts["watch-filter"]:
        _watch_quietly(opts["watch-socket"], opts["watch-filter"])
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"gtd sandbox: cannot run {command[0]}: {exc.strerror}\n")
        return 127 if isinstance(exc, FileNotFoundError) else FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
