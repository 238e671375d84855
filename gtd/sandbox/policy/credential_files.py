"""A cloud model provider's credential files (providers/cloud_credentials.py), made readable -- and
only readable -- inside the sandbox, although they live in hidden secret dirs (`~/.aws`, `~/.config/gcloud`).

Each file is resolved on the host before anything is mounted, and never trusted from the workspace:

- a path inside the workspace is not mounted (the workspace is visible as it is; a symlink there
  is not followed to a secret);
- the person's own symlinks outside the workspace are followed (dotfile managers), but a file that
  resolves into the workspace or another writable path (the agent could swap it for a link between
  the check and a later command's mount), or into another hidden path (`~/.aws/credentials ->
  ~/.ssh/id_ed25519`), is refused; so is a path the person listed in denyReadPaths itself;
- only a regular file is mounted (a directory only inside the hidden dir it belongs to, holding no
  other hidden path: the SSO token cache), read-only, at the place the CLI
  looks: the resolved directory that holds it plus its own name, so a hidden parent's empty tmpfs
  gets just that entry.

What was refused, and why, is shown by `gtd sandbox explain`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from gtd.record import record
from gtd.sandbox.policy.containment import inside

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Mapping


@record(frozen=True)
class CredentialFile:
    target: Path  # where the CLI looks inside the sandbox
    source: Path  # the resolved regular file (or directory) on the host, bound read-only at target
    origin: str  # why it is readable (which provider, chosen where)


@record(frozen=True)
class RefusedCredential:
    path: Path
    origin: str
    reason: str


def resolve_credential_files(wanted: Mapping[Path, str], *, workspace: Path, deny_read: tuple[Path, ...],
                             writable: tuple[Path, ...] = ()) -> tuple[list[CredentialFile], list[RefusedCredential]]:
    """The files of `wanted` (path -> why) that can be mounted read-only, and the refused ones with the
    reason. Missing files are left out silently (the CLI then tries its next credential source)."""
    root = os.path.realpath(workspace)
    writable_real = [os.path.realpath(w) for w in writable]
    hidden: set[str] | None = None  # resolved once a wanted file exists (most phases have none: ~100 realpaths)
    found: list[CredentialFile] = []
    refused: list[RefusedCredential] = []
    for spelled, origin in wanted.items():
        path = Path(os.path.normpath(spelled if spelled.is_absolute() else workspace / spelled))
        if inside(str(path), str(workspace)) or inside(str(path), root):
            refused.append(RefusedCredential(path, origin, "inside the workspace: visible as it is there, not "
                                                           "mounted (a symlink there is not followed)"))
            continue
        if not os.path.lexists(path):
            continue
        try:
            parent = os.path.realpath(path.parent)
            real = os.path.realpath(path)
        except OSError as exc:
            refused.append(RefusedCredential(path, origin, f"cannot be resolved ({exc.strerror or exc}): not mounted"))
            continue
        target = Path(parent) / path.name
        if inside(real, root) or inside(parent, root):
            refused.append(RefusedCredential(path, origin, "resolves into the workspace, which the agent can write"))
            continue
        inside_writable = next((w for w in writable_real if inside(real, w) or inside(parent, w)), None)
        if inside_writable is not None:
            refused.append(RefusedCredential(path, origin, f"inside the writable path {inside_writable}: the agent "
                                                           f"could replace it"))
            continue
        if hidden is None:
            hidden = {os.path.normpath(str(d)) for d in deny_read} | {os.path.realpath(d) for d in deny_read}
        if str(path) in hidden or str(target) in hidden or real in hidden:
            refused.append(RefusedCredential(path, origin, "listed in denyReadPaths"))
            continue
        # Hidden dirs that hold the file as the CLI names it may hold it; a link out into another one may not.
        holders = {h for h in hidden if inside(str(path), h) or inside(str(target), h)}
        elsewhere = [h for h in hidden if inside(real, h) and h not in holders]
        if elsewhere:
            refused.append(RefusedCredential(path, origin, f"resolves to {real}, inside {elsewhere[0]}, which "
                                                           f"stays hidden"))
            continue
        try:
            st = os.lstat(real)
        except OSError:
            continue
        # A directory (the SSO token cache) only inside the hidden dir it belongs to, holding no other hidden path.
        directory = stat.S_ISDIR(st.st_mode) and holders and not any(inside(h, real) for h in hidden - holders)
        if not (stat.S_ISREG(st.st_mode) or directory):
            refused.append(RefusedCredential(path, origin, "not a regular file"))
            continue
        found.append(CredentialFile(target, Path(real), origin))
    return found, refused
