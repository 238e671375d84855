"""Building gtd's C sources (launch.c, relay.c) with the machine's C compiler, once per version.

Each build is named by a hash of its source and the machine's architecture (a stale build is never
taken), compiled in a private (0700) temporary directory beside the target and renamed into place (a
reader never sees half a file; nobody else can open it while it is written). A failed build leaves a
`.failed` note, so a broken compiler is not run again for every session.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gtd.digest import sha256

COMPILE_SECONDS = 60


def versioned_name(prefix: str, source: Path, suffix: str = "") -> str:
    """One name per version of the source and per architecture."""
    digest = sha256(source.read_bytes() + os.uname().machine.encode()).hexdigest()[:16]
    return f"{prefix}-{digest}{suffix}"


def fits(path: Path | str, max_bytes: int) -> bool:
    """A non-empty file no bigger than `max_bytes` (anything far bigger than the build is not it)."""
    try:
        return 0 < os.path.getsize(path) <= max_bytes
    except OSError:
        return False


def compile_into(source: Path, name: str, directory: Path, flags: list[str], *, max_bytes: int,
                 mode: int) -> Path | None:
    """Build `source` as `directory/name` (atomically, with `mode`); None when there is no compiler or it
    failed (remembered in `name.failed`)."""
    target, failed = directory / name, directory / f"{name}.failed"
    if target.is_file():
        return target
    import shutil  # here: only a build needs it

    from gtd.host_programs import host_environment, host_program

    named = os.environ.get("CC")
    compiler = (host_program(named) if named else None) or \
        next(filter(None, (host_program(cc) for cc in ("cc", "gcc", "clang"))), None)
    if compiler is None or failed.exists():
        return None
    import tempfile  # here: only a build needs it, not a session loading a built file

    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # The compiler creates its output with the umask's mode before the chmod below: in a directory only
        # this user can enter, nobody can open it for writing meanwhile and change it after the load's checks.
        private = tempfile.mkdtemp(prefix=f".{name}.", dir=directory)
    except OSError:
        return None
    tmp = os.path.join(private, name)
    try:
        result = subprocess.run([compiler, *flags, "-o", tmp, str(source)], capture_output=True, text=True,
                                timeout=COMPILE_SECONDS, stdin=subprocess.DEVNULL, env=host_environment())
        if result.returncode != 0 or not fits(tmp, max_bytes):
            failed.write_text(result.stderr or f"{compiler} exited {result.returncode}")
            return None
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(private, ignore_errors=True)


def report(what: str, built: Path | None, fallback: str) -> int:
    """A build command's outcome (`python -m gtd.sandbox.linux.nativelaunch`, `...nativerelay`, run by scripts/setup):
    where the build is, or which fallback gtd uses without it; the command's exit status."""
    import sys

    from gtd import terminal_text

    if built:
        terminal_text.write(f"{what}: {built}\n")
        return 0
    terminal_text.write(f"{what}: not built (no C compiler, or it failed); {fallback}\n", stream=sys.stderr)
    return 1
