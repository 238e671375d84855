"""Refused writes seen from the sandbox itself, whatever the command prints or its exit status.

A command that hides its error (`touch ~/.x 2>/dev/null`, a program that catches it) leaves nothing for the
text detection (diagnose/violations.py). The launcher inside installs a seccomp filter that notifies on
write-like calls (opening for writing, creating, removing, renaming, linking) and hands its listener to
this module over a Unix socket; the command never holds it. Seccomp user notification is the one kernel
mechanism that works for an unprivileged user (docs/refusal-detection.md). For each call gtd reads the
path from the process's memory and records a refusal when the sandbox's view of the path lies on a
read-only mount (where the kernel answers EROFS; looked at with `openat2(RESOLVE_IN_ROOT)` under the
process's own root, so a symlink inside never leads gtd to a host path) and the policy refuses it; then it
lets the call go on (`FLAG_CONTINUE`: the kernel's mounts and Landlock decide, as without the watch).
Recording first means a refusal is known by the time the command sees it. Reporting only: a failure here
never stops a command. Under bwrap a write Landlock alone refuses (EACCES on a writable mount) is not
seen; under the Landlock backend, which has no mounts, the question is Landlock's own (landlock_watch.py).
"""

from __future__ import annotations

import fcntl
import functools
import os
import select
import socket
import struct
import threading

from gtd.background import Background

RECV, SEND, ID_VALID = 0xC0502100, 0xC0182101, 0x40082102  # SECCOMP_IOCTL_NOTIF_*, x86_64 and arm64 alike
FLAG_CONTINUE = 1
AT_FDCWD = -100
WRITE_BITS = (os.O_WRONLY, os.O_RDWR, os.O_TRUNC)  # an open that may write (O_CREAT alone does not)
# name -> (the (dirfd arg or None, path arg) of each path it writes, the open flags' arg or None)
WATCHED = {
    "open": ([(None, 0)], 1), "openat": ([(0, 1)], 2), "creat": ([(None, 0)], None),
    "mkdir": ([(None, 0)], None), "mkdirat": ([(0, 1)], None), "rmdir": ([(None, 0)], None),
    "unlink": ([(None, 0)], None), "unlinkat": ([(0, 1)], None),
    "rename": ([(None, 0), (None, 1)], None), "renameat": ([(0, 1), (2, 3)], None),
    "renameat2": ([(0, 1), (2, 3)], None), "link": ([(None, 1)], None), "linkat": ([(2, 3)], None),
    "symlink": ([(None, 1)], None), "symlinkat": ([(1, 2)], None), "mknod": ([(None, 0)], None),
    "mknodat": ([(0, 1)], None), "truncate": ([(None, 0)], None), "utimensat": ([(0, 1)], None),
}
SYS_OPENAT2 = 437
RESOLVE_NO_MAGICLINKS, RESOLVE_IN_ROOT = 0x02, 0x10
ST_RDONLY = 1


def for_command(policy, on_refused, refuses=None) -> WriteWatch | None:
    """A watch for one command under `policy`, reporting each refused write the policy refuses (outside
    quiet_roots) to `on_refused(path, reason)`; None on a kernel or libseccomp that cannot notify.
    `refuses(root, path, call)`: the path the kernel will refuse for that call, or None (default: the path as
    given when it lies on one of bwrap's read-only mounts, `on_read_only_mount`; the Landlock backend's rules,
    resolved: landlock_watch.py)."""
    if not kernel_supported():
        return None
    from pathlib import Path

    from gtd.paths import agents_dir

    quiet = quiet_roots(policy, agents_dir())

    def decide(path: str) -> str | None:
        from gtd.sandbox.diagnose.why import why_path

        if any(path == root or path.startswith(root + "/") for root in quiet):
            return None
        verdict = why_path(policy, Path(path))
        return None if verdict.allowed else verdict.reason

    try:
        return WriteWatch(decide, on_refused, refuses)
    except (OSError, ImportError, AttributeError, RuntimeError, ValueError):  # no libseccomp, no memfd
        return None


MIN_KERNEL = (5, 9)  # FLAG_CONTINUE (5.5) and NOTIF_ID_VALID's corrected number (5.9): an older kernel is not watched


def kernel_supported(release: str | None = None) -> bool:
    """Whether this kernel answers the watch's calls as it needs: on 5.0-5.4 a call could not be let go on
    (no FLAG_CONTINUE), so it would wait for ever; there gtd reads refusals from the output alone."""
    import re

    match = re.match(r"(\d+)\.(\d+)", os.uname().release if release is None else release)
    return match is not None and (int(match[1]), int(match[2])) >= MIN_KERNEL


def quiet_roots(policy, agents) -> tuple[str, ...]:
    """Where a refused write is not reported by the watch: tools refuse them on their own and go on, every
    run, and a line for each would bury the refusals that matter. The agent CLIs' settings and logins in
    gtd's agent dirs (gtd keeps them read-only); the repository's `.git` (opencode's snapshots, go's VCS
    stamp refreshing the index); the home directories of the tools whose caches or toolchains the sandbox
    shows read-only or layers (`~/.cargo/.package-cache`, `~/.gradle/native`: homeAllowList's directories
    and the package caches, by their top entry in HOME); and /proc, /sys, /dev. A command that says it was refused there is still reported
    from its output (diagnose/violations.py); ~/.bashrc, ~/.config, ~/.local and everything outside HOME
    stay watched."""
    roots = {"/proc", "/sys", "/dev", str(agents), os.path.realpath(agents), str(policy.workspace) + "/.git"}
    home = policy.home
    tool_dirs = [path for path, _ in policy.home_visible if path.is_dir()] + [cache.path for cache in policy.caches]
    for path in tool_dirs:
        try:
            top = path.relative_to(home).parts[0]
        except (ValueError, IndexError):
            continue
        if top not in (".config", ".local"):
            roots.add(str(home / top))
    return tuple(sorted(roots))


@functools.lru_cache(maxsize=1)
def program() -> tuple[bytes, dict[int, str]]:
    """The notifying filter as BPF bytes, and the watched calls by number (native architecture); compiled
    once and remembered as seccomp.py's own filter is (libseccomp costs more than a sandbox start)."""
    from gtd.sandbox.linux.seccomp import cached_program

    blob = cached_program(__file__, _compile, valid=lambda b: b"\n" in b and len(b.partition(b"\n")[2]) % 8 == 0)
    names, _, bpf = blob.partition(b"\n")
    numbers = {int(nr): name for nr, _, name in (item.partition(":") for item in names.decode().split(",") if item)}
    return bpf, numbers


def _compile() -> bytes:
    """`nr:name,...` of the watched calls, a newline, then the BPF program."""
    import pyseccomp as sc

    f = sc.SyscallFilter(defaction=sc.ALLOW)
    numbers = {}
    for name, (_, flags_arg) in WATCHED.items():
        try:
            nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
            if flags_arg is None:
                f.add_rule(sc.NOTIFY, name)
            for bit in WRITE_BITS if flags_arg is not None else ():
                f.add_rule(sc.NOTIFY, name, sc.Arg(flags_arg, sc.MASKED_EQ, bit, bit))
        except (OSError, ValueError, RuntimeError):  # not a call on this architecture (open, creat on arm64)
            continue
        if isinstance(nr, int) and nr >= 0:
            numbers[nr] = name
    with os.fdopen(os.memfd_create("gtd-write-watch"), "w+b") as out:
        f.export_bpf(out)
        out.seek(0)
        bpf = out.read()
    return ",".join(f"{nr}:{name}" for nr, name in numbers.items()).encode() + b"\n" + bpf


class WriteWatch:
    """One per sandboxed command: `fds` go to bwrap or the launcher (pass_fds), `launcher_args` to the launcher;
    `started()` once it runs; `on_refused(path, reason)` is called for each refused write, once per path."""

    def __init__(self, decide, on_refused, refuses=None):
        self._decide = decide  # sandbox path -> the policy's reason to refuse it, or None
        # (root, path, call) -> the path the kernel will refuse (as the policy is to be asked about it), or None
        self._refuses = refuses or on_read_only_mount
        self._on_refused = on_refused
        bpf, self._names = program()
        self._mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._theirs = theirs
        self._program = os.memfd_create("gtd-write-watch")
        os.write(self._program, bpf)
        os.lseek(self._program, 0, os.SEEK_SET)
        self.fds = (theirs.fileno(), self._program)
        self._stop = threading.Event()
        self._said: set[str] = set()
        self._thread = None

    def launcher_args(self) -> list[str]:
        return ["--watch-socket", str(self.fds[0]), "--watch-filter", str(self.fds[1])]

    def started(self) -> None:
        """bwrap has the child's ends: close ours of them, and serve the listener the launcher sends."""
        self._theirs.close()
        os.close(self._program)
        self._thread = Background(self._serve, on_error=Background.report)

    def close(self) -> None:
        """After every process of the command is gone (the session waits for them first)."""
        self._stop.set()
        try:
            self._mine.shutdown(socket.SHUT_RDWR)  # wakes a thread still waiting for the listener
        except OSError:
            pass
        if self._thread is not None and not self._thread.running_here():
            self._thread.join(2)
        self._mine.close()

    def _serve(self) -> None:
        # No timeout: a listener that arrived after gtd stopped waiting would leave every watched call
        # inside unanswered. The wait ends with the message, the launcher's end closing, or close().
        try:
            _, fds, _, _ = socket.recv_fds(self._mine, 1, 1)
        except OSError:
            return
        if not fds:
            return  # the launcher could not install the filter: nothing to watch
        listener = fds[0]
        try:
            poller = select.poll()
            poller.register(listener, select.POLLIN)
            while not self._stop.is_set():
                events = poller.poll(200)
                if any(mask & (select.POLLHUP | select.POLLERR) for _, mask in events) and \
                        not any(mask & select.POLLIN for _, mask in events):
                    return  # every process under the filter is gone
                if events:
                    self._one(listener)
        finally:
            os.close(listener)

    def _one(self, listener: int) -> None:
        buf = bytearray(80)  # struct seccomp_notif, zeroed as the kernel requires
        try:
            fcntl.ioctl(listener, RECV, buf, True)
        except OSError:
            return
        nid, pid, _, nr = struct.unpack_from("=QIIi", buf)
        args = struct.unpack_from("=6Q", buf, 32)
        name = self._names.get(nr)
        try:
            refused = self._refused(pid, name, _paths(pid, name, args)) if name is not None else []
            fcntl.ioctl(listener, ID_VALID, struct.pack("=Q", nid))  # what was read was still that call's
            for path, reason in refused:  # recorded before the call goes on: the command sees its error after
                if path in self._said:
                    continue
                self._said.add(path)
                self._on_refused(path, reason)
        except Exception:  # noqa: BLE001 - reporting only; the call must be answered whatever happened
            pass
        finally:
            try:
                fcntl.ioctl(listener, SEND, struct.pack("=QqiI", nid, 0, 0, FLAG_CONTINUE))
            except OSError:
                pass  # the process is gone

    def _refused(self, pid: int, call: str, paths: list[str]) -> list[tuple[str, str]]:
        """(path, the policy's reason) for each path the kernel will refuse (under bwrap: its nearest existing
        ancestor, as the process sees it, is on a read-only mount; checked first: cheap, and false for almost
        every write that succeeds), and the policy refuses it."""
        paths = [p for p in paths if p not in self._said]
        if not paths:
            return []
        root = os.open(f"/proc/{pid}/root", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            out = []
            for path in paths:
                if (seen := self._refuses(root, path, call)) is not None and (reason := self._decide(seen)) is not None:
                    out.append((seen, reason))
            return out
        finally:
            os.close(root)


def _paths(pid: int, name: str, args) -> list[str]:
    """The absolute paths (as the sandbox sees them) the call would write; [] when it would not write."""
    spec, flags_arg = WATCHED[name]
    if flags_arg is not None and not any(args[flags_arg] & bit for bit in WRITE_BITS):
        return []
    out = []
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for dir_arg, path_arg in spec:
                if args[path_arg] == 0:
                    continue  # utimensat(fd, NULL, ...): the descriptor itself
                raw = _string(mem, args[path_arg])
                if not raw:
                    continue
                path = os.fsdecode(raw)
                if not path.startswith("/"):
                    dirfd = _int32(args[dir_arg]) if dir_arg is not None else AT_FDCWD
                    base = os.readlink(f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}")
                    path = os.path.join(base, path)
                out.append(os.path.normpath(path))
    except (OSError, ValueError):
        return []
    return out


def _string(mem, address: int) -> bytes:
    data = b""
    while b"\0" not in data and len(data) < 4096:
        mem.seek(address + len(data))
        chunk = mem.read(256 - (address + len(data)) % 256)  # never across a page the string does not reach
        if not chunk:
            break
        data += chunk
    return data.split(b"\0", 1)[0]


# Creating an entry that exists fails with EEXIST before the mount's EROFS or Landlock is asked.
CREATING = ("mkdir", "mkdirat", "mknod", "mknodat", "symlink", "symlinkat", "link", "linkat")


def on_read_only_mount(root: int, path: str, call: str) -> str | None:
    """bwrap's refusal: `path` when the call would meet a read-only mount (EROFS), else None."""
    if call in CREATING and entry_exists(root, path):
        return None  # `mkdir -p /etc/ssl`: EEXIST
    return path if read_only_in(root, path) else None


def entry_exists(root: int, path: str) -> bool:
    """Whether `path`, beneath `root` (its directories resolved there), is an entry (a link as itself)."""
    parent = open_in_root(root, os.path.dirname(path) or "/")
    if parent is None:
        return False
    try:
        os.stat(os.path.basename(path), dir_fd=parent, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(parent)


def read_only_in(root: int, path: str) -> bool:
    """Whether `path`'s nearest existing ancestor, as the process whose root is `root` sees it, is on a
    read-only mount: resolved beneath that root (openat2 RESOLVE_IN_ROOT), never on the host's."""
    parts = path.strip("/").split("/")
    for end in range(len(parts), -1, -1):
        fd = open_in_root(root, "/".join(parts[:end]) or ".")
        if fd is None:
            continue
        try:
            return bool(os.fstatvfs(fd).f_flag & ST_RDONLY) and not special(fd)
        finally:
            os.close(fd)
    return False


def special(fd: int) -> bool:
    """A device, FIFO or socket: writable on a read-only mount (/dev/null)."""
    import stat

    mode = os.fstat(fd).st_mode
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


@functools.lru_cache(maxsize=1)
def _openat2_call():
    """libc's syscall() and the `struct open_how` for openat2 (ctypes: loaded at the first refusal only)."""
    import ctypes

    how = (ctypes.c_uint64 * 3)(os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
    return ctypes.CDLL(None, use_errno=True).syscall, ctypes.byref(how), ctypes.sizeof(how)


def open_in_root(dirfd: int, path: str) -> int | None:
    """An O_PATH descriptor of `path` beneath `dirfd` taken as the root, or None (missing, or not reachable)."""
    syscall, how, size = _openat2_call()
    fd = syscall(SYS_OPENAT2, dirfd, os.fsencode(path), how, size)
    return fd if fd >= 0 else None
