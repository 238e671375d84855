"""Which Linux backend runs the sandbox: `sandbox.backend: auto | bwrap | landlock`.

`auto` takes bubblewrap wherever it can create its namespaces, and the Landlock backend where it
cannot: a container under Docker's default seccomp profile (unshare/clone with CLONE_NEW* refused),
Debian's `unprivileged_userns_clone = 0`, `user.max_user_namespaces = 0`, AppArmor's restriction
without a profile for bwrap. The probe is a forked child that creates the namespaces bwrap asks for
(user, mount, pid, network): a fraction of a millisecond. Where AppArmor's restriction is on, creating
the user namespace succeeds and what follows fails, so bwrap itself is tried there (a minimal run).
A missing bwrap is not a reason: the bwrap backend's own message (install it) stays the answer.
"""

from __future__ import annotations

import os

from gtd.record import record

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
BACKENDS = ("auto", "bwrap", "landlock")


@record(frozen=True)
class Choice:
    name: str  # "bwrap" or "landlock"
    reason: str  # why: for the start line and `gtd doctor`'s backend row


def choose(configured: str = "auto", bwrap: str | None = None) -> Choice:
    if configured == "landlock":
        return Choice("landlock", "sandbox.backend is landlock")
    if configured == "bwrap" or bwrap is None:
        return Choice("bwrap", "sandbox.backend is bwrap" if configured == "bwrap" else "bubblewrap is not installed")
    refused = namespaces_refused(bwrap)
    if refused is None:
        return Choice("bwrap", "bubblewrap can create its namespaces here")
    return Choice("landlock", f"bubblewrap cannot create its namespaces here ({refused})")


def namespaces_refused(bwrap: str | None = None) -> str | None:
    """Why bubblewrap's namespaces cannot be made here, or None when they can."""
    from gtd.sandbox.linux import userns

    if (refused := userns.refusal()) is not None:
        return refused
    if not _remembered_working() and (failed := _unshare_in_child()) is not None:
        return failed
    _remember_working()
    if bwrap is not None and userns.restriction() is not None:
        return _bwrap_probe(bwrap)
    return None


def _marker():
    """Where "namespaces work here" is remembered: gtd's state dir (no sandbox can write it), keyed like the
    Landlock ABI (kernel._probe_context: boot, user and mount namespaces, seccomp state); None: always probe."""
    from gtd.sandbox.linux.kernel import _probe_context

    context = _probe_context()
    if context is None:
        return None, None
    from gtd.paths import user_state_dir

    return user_state_dir() / "cache" / "namespaces-work", context


def _remembered_working() -> bool:
    """The probe costs a fork (~5 ms of every start): a positive answer is remembered per context. Only
    that: a refusal is probed again each time (a sysctl may change without a new context: userns.refusal
    reads those every time)."""
    path, context = _marker()
    try:
        return path is not None and path.read_text() == context
    except (OSError, UnicodeDecodeError):
        return False


def _remember_working() -> None:
    path, context = _marker()
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".namespaces-work.{os.getpid()}.tmp")
        tmp.write_text(context)
        os.replace(tmp, path)
    except OSError:
        pass


def _unshare_in_child() -> str | None:
    """Create the namespaces in a forked child (a multithreaded process may not unshare a user namespace).
    ctypes is imported here only: a start whose answer is remembered skips it (~1.5 ms, issue 13)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one system call, its errno back through the pipe, no Python clean-up
        try:
            failed = libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) != 0
            os.write(w, str(ctypes.get_errno() if failed else 0).encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        said = os.read(r, 16).decode() or "0"
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    err = int(said) if said.isdigit() else 0
    if not err:
        return None
    return f"creating a user namespace failed: {os.strerror(err)}, as under a container's seccomp profile"


def _bwrap_probe(bwrap: str) -> str | None:
    import subprocess

    try:
        r = subprocess.run([bwrap, "--unshare-user", "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "true"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if r.returncode == 0:
        return None
    return (r.stderr.strip().splitlines() or [f"a minimal bwrap run exited {r.returncode}"])[0]


_announced: set[str] = set()


def announce(reason: str) -> None:
    """The one line at start that names the Landlock backend (once per gtd process, on stderr)."""
    if reason in _announced:
        return
    _announced.add(reason)
    import sys

    from gtd.terminal_text import write

    write(f"gtd sandbox: Landlock backend ({reason}): weaker than bubblewrap's namespaces; "
          "`gtd doctor` says what is weaker\n", stream=sys.stderr)


# What the Landlock backend refuses less well than bubblewrap, and why (docs/landlock-backend.md says more).
RESIDUALS = (
    "the workspace root (and any directory holding a protected path) takes no new entries: Landlock grants whole "
    "hierarchies and cannot take .git back out, so the workspace is writable entry by entry; approve a path, or "
    "create it on the host, to make it writable",
    "no PID namespace: host processes and their command lines are visible in /proc (their memory, environment "
    "and signals are not reachable: Landlock's ptrace and signal scoping, the latter from ABI 6)",
    "no network namespace: local servers inside cannot be connected to, direct connections on intercepted ports "
    "are refused rather than decided, and the proxy's port is reachable on any address (Landlock matches ports only)",
    "/tmp is not readable: TMPDIR is a private directory removed at the end; /dev is the host's, a few devices only",
    "no package-cache layers (caches stay read-only) and no sanitized ~/.npmrc or Maven settings (hidden instead)",
    "an agent CLI's settings and hooks in its own state dir can be changed during the session (put back at its end)",
    "file metadata is not covered: chmod, utimes and xattrs work on any file of yours, outside the writable paths "
    "too (set-id bits stay refused; the work tree's protected paths get their modes back at the end)",
    "no new pseudo-terminals and no /dev/shm (the host's: the person's other terminals, other processes' memory)",
)


def status(configured: str = "auto") -> dict:
    """For `gtd doctor` and `gtd sandbox explain`: the backend a sandbox would use now, why, and what is weaker."""
    from gtd.host_programs import host_program

    choice = choose(configured, host_program("bwrap"))
    return {"backend": choice.name, "reason": choice.reason,
            "weaker": list(RESIDUALS) if choice.name == "landlock" else []}
