"""The only way gtd's host side touches files inside a workspace (the repository the agent works in).

Whatever is in the workspace may have been planted by the agent or by whoever wrote the cloned
repository, so gtd never trusts it:

- every path component inside the repository is opened relative to a directory descriptor with
  O_NOFOLLOW: a symlinked file or parent directory is an error, never followed;
- only regular files are read or replaced (a FIFO is opened non-blocking and refused, so it cannot
  hang gtd; devices and directories are refused before they are opened);
- reads are capped at MAX_READ_BYTES;
- writes are atomic: a temp file created O_EXCL|O_NOFOLLOW in the same directory, then renamed over
  the target relative to the same directory descriptor, so nothing is ever written through a link;
- errors name the file and the reason, never its content.

Escalated write paths are resolved here too (`resolve_write_target`): gtd decides about the place a
write would really land, never about its spelling.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from gtd.errors import GtdError

MAX_READ_BYTES = 1024 * 1024  # TODO.md, AGENTS.md, .gtdrc.json, git config files: far below this
NEW_FILE_MODE = 0o644

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_SYMLINKS = "gtd never follows symlinks in the workspace"


class UnsafeWorkspacePath(GtdError):
    """A workspace path gtd refuses to use: a symlink, a special file, too big, or leaving the workspace."""

    def __init__(self, shown: str, reason: str):
        self.shown, self.reason = shown, reason
        super().__init__(f"{shown} {reason}")


def kind_of(mode: int) -> str:  # what a file that is not a regular one is, in words ("a FIFO", ...)
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _refuse_kind(shown: str, mode: int) -> UnsafeWorkspacePath:
    if stat.S_ISLNK(mode):
        return UnsafeWorkspacePath(shown, f"is a symlink; {_NO_SYMLINKS} (replace it with a regular file)")
    return UnsafeWorkspacePath(shown, f"is {kind_of(mode)}; gtd only reads and writes regular files in the workspace")


def relative_parts(root: Path, path: str | os.PathLike) -> list[str]:
    """`path` (relative to root, or absolute under it) as its components below root. `..`, `.`
    and empty components are refused, never normalised away: a caller must name the real place."""
    text = os.fspath(path)
    if os.path.isabs(text):
        for base in {os.path.abspath(root), os.path.realpath(root)}:
            if text == base:
                return []
            if text.startswith(base.rstrip(os.sep) + os.sep):
                text = text[len(base.rstrip(os.sep)) + 1:]
                break
        else:
            raise UnsafeWorkspacePath(text, f"is outside the workspace {root}")
    parts = [p for p in text.split(os.sep) if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeWorkspacePath(text, "contains '..'; gtd only uses paths that stay inside the workspace")
    return parts


def _within(path: str, base: str) -> bool:
    """path is base or below it (both absolute and normalised; gtd.sandbox.policy.containment.inside, which
    this module cannot import: `gtd status` runs it without loading gtd.sandbox)."""
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


class _Missing(Exception):
    """A component does not exist (reads: the file is simply absent)."""


def _open_root(root: Path) -> int:
    # The root itself is where the person ran gtd: its own spelling is theirs to choose.
    return os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _open_dirs(root_fd: int, parts: list[str], *, create: bool) -> int:
    """A descriptor of the directory parts[...] names below root_fd, each step O_NOFOLLOW.
    With create, missing directories are made (mkdirat never follows a symlink at its target)."""
    fd = os.dup(root_fd)
    try:
        for index, name in enumerate(parts):
            shown = os.path.join(*parts[: index + 1])
            try:
                next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise _Missing() from None
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile: opened (and checked) below like any other
                next_fd = _open_dir_checked(fd, name, shown)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise
                next_fd = _open_dir_checked(fd, name, shown)
            os.close(fd)
            fd = next_fd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_dir_checked(parent_fd: int, name: str, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise _Missing() from None
        try:
            mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
        except OSError:
            raise exc from None
        if stat.S_ISLNK(mode):
            raise UnsafeWorkspacePath(shown, f"is a symlink; {_NO_SYMLINKS} (a parent directory of a file gtd uses)") from None
        if not stat.S_ISDIR(mode):
            raise _Missing() from None  # a file where a directory would be: the path does not exist
        raise


class _Parent:
    """The directory holding a workspace file, opened without following symlinks."""

    def __init__(self, root: Path, path: str | os.PathLike, *, create: bool = False):
        parts = relative_parts(root, path)
        if not parts:
            raise UnsafeWorkspacePath(os.fspath(path), "is the workspace itself, not a file in it")
        self.name = parts[-1]
        self.shown = os.path.join(*parts)
        root_fd = _open_root(root)
        try:
            self.fd = _open_dirs(root_fd, parts[:-1], create=create)
        finally:
            os.close(root_fd)

    def lstat(self) -> os.stat_result | None:
        try:
            return os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def __enter__(self) -> "_Parent":
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def _parent(root: Path, path: str | os.PathLike, *, create: bool = False) -> _Parent | None:
    try:
        return _Parent(root, path, create=create)
    except _Missing:
        return None


@contextlib.contextmanager
def _entry(root: Path, path: str | os.PathLike):
    """(the open parent directory, the entry's lstat) for an existing entry, else None: a missing
    entry, or a missing directory on its way, is simply absent (symlinked parents are an error)."""
    parent = _parent(root, path)
    if parent is None:
        yield None
        return
    with parent:
        st = parent.lstat()
        yield None if st is None else (parent, st)


# -- reading ----------------------------------------------------------------------------------------

def read_bytes(root: Path, path: str | os.PathLike, *, limit: int = MAX_READ_BYTES) -> bytes | None:
    """The file's bytes, or None when it does not exist. Symlinks, special files and files over
    `limit` bytes are an UnsafeWorkspacePath error naming the file."""
    with _entry(root, path) as found:
        if found is None:
            return None
        parent, st = found
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_kind(parent.shown, st.st_mode)  # refused before opening: no device or FIFO is opened
        try:
            fd = os.open(parent.name, _READ_FLAGS, dir_fd=parent.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse_kind(parent.shown, stat.S_IFLNK) from None
            raise UnsafeWorkspacePath(parent.shown, f"cannot be read: {exc.strerror}") from None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):  # swapped between the check and the open
                raise _refuse_kind(parent.shown, mode)
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, min(65536, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                raise UnsafeWorkspacePath(parent.shown, f"is larger than {limit} bytes, the most gtd reads from a workspace file")
            return b"".join(chunks)
        finally:
            os.close(fd)


def read_text(root: Path, path: str | os.PathLike, *, limit: int = MAX_READ_BYTES, errors: str = "replace") -> str | None:
    """The file's text (UTF-8), or None when it does not exist. See read_bytes for what is refused."""
    data = read_bytes(root, path, limit=limit)
    return None if data is None else data.decode("utf-8", errors)


def is_file(root: Path, path: str | os.PathLike) -> bool:
    """True for a regular file, False when nothing is there; a symlink or special file is an error."""
    with _entry(root, path) as found:
        if found is None:
            return False
        parent, st = found
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_kind(parent.shown, st.st_mode)
        return True


def exists(root: Path, path: str | os.PathLike) -> bool:
    """Whether anything (not followed) is at the path; symlinked parent directories are an error."""
    with _entry(root, path) as found:
        return found is not None


def names_in(root: Path, path: str | os.PathLike = "") -> frozenset[str] | None:
    """The names in a workspace dir (default: the root) reached through no symlink, nothing in it opened; None
    when it cannot be listed. A name not listed is absent (the config loader's ~20 candidates: one listing)."""
    try:
        fd = _open_root(root)
    except OSError:
        return None
    try:
        fd, root_fd = _open_dirs(fd, relative_parts(root, path), create=False), fd
        os.close(root_fd)
        return frozenset(os.listdir(fd))
    except (OSError, _Missing, GtdError):
        return None
    finally:
        os.close(fd)


def read_metadata_text(path: str | os.PathLike, *, limit: int = MAX_READ_BYTES,
                       untrusted: str | os.PathLike | None = None) -> str | None:
    """Files gtd only parses, in or out of the workspace: git metadata for paths to protect (`.git`
    pointer files, `commondir`, git config and its includes) and the person's registry configs
    (`~/.npmrc`, pip.conf, ...). Symlinks are followed, as git and the package managers follow them:
    not following would hide from gtd what they will read; the content is never shown to anyone.
    The path is resolved once and that place is read (a link swapped in meanwhile is refused, not
    followed); with `untrusted` (the workspace), a file there, or reached through a link there, is None:
    the agent wrote or linked it. Still only regular files (a FIFO cannot hang gtd), capped. None when
    missing or refused."""
    try:
        os.stat(path)  # most of the config files looked for are not there: nothing to resolve then
    except OSError:
        return None
    try:
        real, visited = resolve_visiting(path)
    except OSError:  # a link on the way gtd may not read (/proc/1/root/...): nothing is read
        return None
    if untrusted is not None:
        roots = {os.path.abspath(untrusted), os.path.realpath(untrusted)}
        if any(_within(v, r) for v in visited for r in roots):
            return None
    try:
        st = os.stat(real, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return None
        fd = os.open(real, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
        return None if len(data) > limit else data.decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


_MAX_LINKS = 40  # the kernel's own limit on links followed in one lookup


def resolve_visiting(path: str | os.PathLike) -> tuple[str, list[str]]:
    """The path's real place (as os.path.realpath finds it) and every place resolving it went through:
    each component as spelled and after each link, so a caller can tell whether a link on the way lies
    where the agent writes (`~/cfg -> proj/.venv/pip.conf -> ...` ends elsewhere but passes the workspace)."""
    text = os.fspath(path)
    pending = (text if os.path.isabs(text) else os.path.join(os.getcwd(), text)).split(os.sep)[::-1]
    current, visited, links, gone = os.sep, [], 0, False
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        visited.append(candidate)
        try:
            is_link = not gone and stat.S_ISLNK(os.lstat(candidate).st_mode)
        except OSError:  # not there (nor anything below it): the rest is taken as spelled, as realpath does
            gone, is_link = True, False
        if not is_link:
            current = candidate
            continue
        target = os.readlink(candidate)
        links += 1
        if links > _MAX_LINKS:
            return candidate, visited  # a loop: opening it fails (ELOOP), nothing is read
        if os.path.isabs(target):
            current = os.sep
        pending.extend(target.split(os.sep)[::-1])
    return current, visited


# -- writing ----------------------------------------------------------------------------------------

def write_text(root: Path, path: str | os.PathLike, text: str, *, make_parents: bool = False) -> None:
    """Replace (or create) the file atomically: readers see the old or the new content, never half,
    and a symlink or special file at the path is refused, never written through."""
    write_bytes(root, path, text.encode("utf-8"), make_parents=make_parents)


def write_bytes(root: Path, path: str | os.PathLike, data: bytes, *, make_parents: bool = False) -> None:
    parent = _parent(root, path, create=make_parents)
    if parent is None:
        raise UnsafeWorkspacePath(os.fspath(path), "cannot be written: its directory does not exist")
    with parent:
        st = parent.lstat()
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise _refuse_kind(parent.shown, st.st_mode)
        mode = stat.S_IMODE(st.st_mode) if st is not None else NEW_FILE_MODE
        tmp = f".{parent.name[:200]}.{os.urandom(6).hex()}.gtd-tmp"  # secrets.token_hex(6), without its imports
        fd = os.open(tmp, _NEW_FLAGS, 0o600, dir_fd=parent.fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, parent.name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=parent.fd)
            except OSError:
                pass
            raise


def append_text(root: Path, path: str | os.PathLike, text: str) -> None:
    """Append by rewriting atomically (the old content is read under the same rules)."""
    existing = read_text(root, path, errors="strict") or ""
    write_text(root, path, existing + text)


def remove(root: Path, path: str | os.PathLike) -> bool:
    """Remove the file (a symlink at the path itself is removed, not followed). Returns whether it existed."""
    with _entry(root, path) as found:
        if found is None:
            return False
        parent, st = found
        if stat.S_ISDIR(st.st_mode):
            raise _refuse_kind(parent.shown, st.st_mode)
        os.unlink(parent.name, dir_fd=parent.fd)
        return True


def create_file(root: Path, path: str | os.PathLike, *, exclusive: bool = False) -> None:
    """Create an empty regular file (its directory must exist); an existing regular file is left
    alone, or with `exclusive` is FileExistsError (the caller must know the file is its own)."""
    parent = _parent(root, path)
    if parent is None:
        raise UnsafeWorkspacePath(os.fspath(path), "cannot be created: its directory does not exist")
    with parent:
        try:
            os.close(os.open(parent.name, _NEW_FLAGS, NEW_FILE_MODE, dir_fd=parent.fd))
        except FileExistsError:
            if exclusive:
                raise
            st = parent.lstat()
            if st is None or not stat.S_ISREG(st.st_mode):
                raise _refuse_kind(parent.shown, st.st_mode if st else 0) from None


def make_dirs(root: Path, path: str | os.PathLike) -> None:
    """Create the directory and its missing parents, each step O_NOFOLLOW (a symlink is an error)."""
    root_fd = _open_root(root)
    try:
        os.close(_open_dirs(root_fd, relative_parts(root, path), create=True))
    except _Missing:
        raise UnsafeWorkspacePath(os.fspath(path), "cannot be created: a file is in the way") from None
    finally:
        os.close(root_fd)


# -- escalated paths: resolve first, then match, decide and create ------------------------------------

def real_place(path: str | os.PathLike, shown: str | os.PathLike) -> str:
    """os.path.realpath of an agent-named path; one gtd may not resolve (/proc/1/root/...) is a refusal, not a traceback."""
    try:
        return os.path.realpath(path)
    except OSError as exc:
        raise UnsafeWorkspacePath(os.fspath(shown), f"cannot be resolved ({exc.strerror or exc}); gtd decides about "
                                                    "a path only by its real place") from None


def resolve_write_target(workspace: Path, raw: str | os.PathLike) -> Path:
    """Where a write to `raw` (relative to the workspace, or absolute) really lands.

    Refused (UnsafeWorkspacePath), because the spelled place is not the real one:
    - a path that names the workspace (relative, or absolute under it) but `..` leads out of it;
    - a path inside the workspace with a symlink in any component (parent or the file itself).
    A path outside the workspace is returned fully resolved (its symlinked parents followed), so it
    is matched and decided as the place it really is."""
    text = os.fspath(raw)
    ws = os.path.realpath(workspace)
    spellings = {os.path.abspath(workspace), ws}
    claims_inside = not os.path.isabs(text) or any(_within(text, s) for s in spellings)
    spelled = os.path.normpath(text if os.path.isabs(text) else os.path.join(ws, text))
    for base in spellings:  # the same place, spelled through the person's (unresolved) workspace path
        if _within(spelled, base):
            spelled = ws + spelled[len(base.rstrip(os.sep)):] if spelled != base else ws
            break
    inside = _within(spelled, ws)
    if claims_inside and not inside:
        raise UnsafeWorkspacePath(text, "leaves the workspace through '..'; gtd only approves paths by their real place")
    real = real_place(spelled, text)
    if inside and real != spelled:
        link = _first_symlink(ws, spelled)
        raise UnsafeWorkspacePath(text, f"goes through the symlink {link} inside the workspace (it really is {real}); "
                                        f"{_NO_SYMLINKS}")
    return Path(real)


def _first_symlink(ws: str, spelled: str) -> str:
    current = ws
    for part in os.path.relpath(spelled, ws).split(os.sep):
        current = os.path.join(current, part)
        if os.path.islink(current):
            return os.path.relpath(current, ws)
    return os.path.relpath(spelled, ws)


def create_resolved(path: Path, *, directory: bool) -> None:
    """Create a path `resolve_write_target` returned, anywhere: from its nearest existing ancestor
    (which must still be where it resolved to), each missing component made O_NOFOLLOW/O_EXCL, so a
    symlink planted meanwhile is an error, not a way elsewhere."""
    text = os.path.normpath(os.fspath(path))
    anchor = text
    while not os.path.lexists(anchor):
        anchor = os.path.dirname(anchor)
    if real_place(anchor, text) != anchor:
        raise UnsafeWorkspacePath(text, f"changed: {anchor} is now a symlink; {_NO_SYMLINKS}")
    if anchor == text:
        if directory:
            make_dirs(Path(anchor), ".")  # checks that what is there is a directory, not a link
        elif not os.path.isfile(anchor) or os.path.islink(anchor):
            raise _refuse_kind(text, os.lstat(anchor).st_mode)
        return
    if not os.path.isdir(anchor):
        raise UnsafeWorkspacePath(text, f"cannot be created: {anchor} is not a directory")
    rest = os.path.relpath(text, anchor)
    if directory:
        make_dirs(Path(anchor), rest)
    else:
        create_file(Path(anchor), rest)
