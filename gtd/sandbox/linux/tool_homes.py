"""Cargo's and Gradle's homes under the Landlock backend: a private one holding gtd's generated settings.

Without mounts the generated files cannot sit where these tools look in the hidden HOME, and neither tool
has a variable naming its settings file. Worse, the person's own file is there but unreadable, and both
stop on it (cargo: "failed to read configuration file ... Permission denied"). So each gets a private home
in the session's tmp dir: gtd's generated file, and a link to every other entry of the person's home
(bin, registry, git, caches, wrapper, ...), so the caches and installed programs stay where they are and
Landlock decides on each as before. Credentials files and the tools' own lock and state files (dot files:
cargo's .package-cache, .global-cache) are not linked: the tool makes fresh ones in the private home.

Yarn has no such variable (berry's YARN_RC_FILENAME is a name looked up in the project too, yarn 1 has
none), and both stop on an unreadable ~/.yarnrc or ~/.yarnrc.yml: see docs/landlock-backend.md.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping

# (variable, the default home under HOME, its settings files: generated, never linked)
TOOLS = {"cargo": ("CARGO_HOME", ".cargo", ("config.toml", "config", "credentials.toml", "credentials")),
         "gradle": ("GRADLE_USER_HOME", ".gradle", ("gradle.properties", "init.d", "init.gradle", "init.gradle.kts"))}


def tool_home_environment(generated: Iterable[tuple[Path, str]], home: Path, tmp: Path,
                          environ: Mapping[str, str]) -> dict[str, str]:
    """{CARGO_HOME / GRADLE_USER_HOME: a private home} for each tool whose settings gtd generated."""
    env = {}
    for target, text in generated:
        for tool, (var, default, settings) in TOOLS.items():
            real = Path(environ.get(var) or home / default)
            if target.parent != real or target.name not in settings or var in env:
                continue
            private = tmp / f"{tool}-home"
            private.mkdir(mode=0o700)
            (private / target.name).write_text(text, encoding="utf-8", errors="surrogateescape")
            _link_entries(real, private, settings)
            env[var] = str(private)
    return env


def _link_entries(real: Path, private: Path, skipped: tuple[str, ...]) -> None:
    try:
        names = [e.name for e in os.scandir(real)]
    except OSError:
        return
    for name in names:
        if name in skipped or name.startswith(".") or os.path.lexists(private / name):
            continue
        os.symlink(real / name, private / name)
