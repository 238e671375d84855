"""The native sandbox launcher (launch.c): Landlock, rlimits and exec without a second Python start.

The Python launcher (launch.py) costs an interpreter start per sandboxed command, a good part of
what every test run of a build phase pays. launch.c does the same (same arguments, same rules) and
is built once per version of its source with the machine's C compiler: by `scripts/setup`
(`python -m gtd.sandbox.nativelaunch`, next to this module) or, on first use, into gtd's state dir
(which the sandbox cannot write). Where no compiler is there, or it fails, launch.py is used.

The binary reaches each sandbox as a read-only copy (`--ro-bind-data`), so it runs wherever gtd's
state dir happens to be, and nothing inside can change it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from gtd import terminal_text

SOURCE = Path(__file__).with_name("launch.c")
INSIDE = "/tmp/.gtd-launch/launch"  # where the copy is mounted inside the sandbox (its private /tmp)
MAX_BYTES = 60 * 1024  # launch.c builds to ~15 KiB: anything far bigger is not it
COMPILE_SECONDS = 60


def binary_name() -> str:
    """One name per version of the source and per architecture: a stale build is never taken."""
    digest = hashlib.sha256(SOURCE.read_bytes() + os.uname().machine.encode()).hexdigest()[:16]
    return f"launch-{digest}"


def locations() -> list[Path]:
    """Where a built launcher is looked for, in order: beside this module (scripts/setup), gtd's state dir."""
    from gtd.paths import user_state_dir

    return [Path(__file__).with_name("_native"), user_state_dir() / "native"]


def launcher_bytes(*, build: bool = True) -> bytes | None:
    """The built launcher's bytes (built into the state dir first if needed and `build`), or None:
    then the Python launcher is used."""
    try:
        name = binary_name()
    except OSError:
        return None
    for where in locations():
        data = _read(where / name)
        if data is not None:
            return data
    if not build:
        return None
    built = compile_into(locations()[-1])
    return _read(built) if built else None


def _read(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if 0 < len(data) <= MAX_BYTES else None


def compile_into(directory: Path) -> Path | None:
    """Build the launcher into `directory` (atomically); None when there is no compiler or it failed
    (remembered, so a failing compiler is not run again for every session)."""
    name = binary_name()
    target, failed = directory / name, directory / f"{name}.failed"
    if target.is_file():
        return target
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None or failed.exists():
        return None
    import tempfile  # here: only a build needs it, not a session loading the built launcher

    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        os.close(fd)
    except OSError:
        return None
    try:
        result = subprocess.run([compiler, "-O2", "-s", "-o", tmp, str(SOURCE)], capture_output=True, text=True,
                                timeout=COMPILE_SECONDS, stdin=subprocess.DEVNULL)
        if result.returncode != 0 or _read(Path(tmp)) is None:
            failed.write_text(result.stderr or f"{compiler} exited {result.returncode}")
            return None
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
        return target
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main() -> int:
    """`python -m gtd.sandbox.nativelaunch`: build it beside this module (scripts/setup), else in the state dir."""
    for where in locations():
        built = compile_into(where)
        if built:
            terminal_text.write(f"gtd sandbox launcher: {built}\n")
            return 0
    terminal_text.write("gtd sandbox launcher: not built (no C compiler, or it failed); the Python launcher is used\n",
                        stream=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
