"""The native sandbox launcher (launch.c): Landlock, rlimits and exec without a second Python start.

The Python launcher (launch.py) costs an interpreter start per sandboxed command, a good part of
what every test run of a build phase pays. launch.c does the same (same arguments, same rules) and
is built once per version of its source with the machine's C compiler: by `scripts/setup`
(`python -m gtd.sandbox.linux.nativelaunch`, next to this module) or, on first use, into gtd's state dir
(which the sandbox cannot write). Where no compiler is there, or it fails, launch.py is used.

The binary reaches each sandbox as a read-only copy (`--ro-bind-data`), so it runs wherever gtd's
state dir happens to be, and nothing inside can change it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gtd.sandbox import nativebuild

SOURCE = Path(__file__).with_name("launch.c")
INSIDE = "/tmp/.gtd-launch/launch"  # where the copy is mounted inside the sandbox (its private /tmp)
# launch.c builds to ~15 KiB (~66-195 KiB linked for 64 KiB pages, aarch64's default): anything far bigger is not it
MAX_BYTES = 256 * 1024


def binary_name() -> str:
    """One name per version of the source and per architecture: a stale build is never taken."""
    return nativebuild.versioned_name("launch", SOURCE)


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


def launcher_path(*, build: bool = True) -> Path | None:
    """The built launcher's file (the Landlock backend executes it where it is: it has no mounts), or None."""
    if launcher_bytes(build=build) is None:
        return None
    name = binary_name()
    return next((where / name for where in locations() if _read(where / name) is not None), None)


def _read(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if 0 < len(data) <= MAX_BYTES else None


def compile_into(directory: Path) -> Path | None:
    """Build the launcher into `directory`; None when there is no compiler or it failed."""
    return nativebuild.compile_into(SOURCE, binary_name(), directory, ["-O2", "-s"], max_bytes=MAX_BYTES, mode=0o755)


def main() -> int:
    """`python -m gtd.sandbox.linux.nativelaunch`: build it beside this module (scripts/setup), else in the state dir."""
    built = next((built for built in map(compile_into, locations()) if built), None)  # the first place that works
    return nativebuild.report("gtd sandbox launcher", built, "the Python launcher is used")


if __name__ == "__main__":
    sys.exit(main())
