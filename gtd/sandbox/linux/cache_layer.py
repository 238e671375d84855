"""The package caches' per-project writable layer (Linux): an overlay over the person's caches, held
mounted by a small holder process for the session, or a per-project copy where overlays cannot be made.
Which caches there are is the policy's business (gtd.sandbox.policy.caches)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gtd.sandbox.policy.containment import strictly_inside

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    pass

# Characters that overlayfs options or an fstab line cannot carry safely: such a cache is left alone.
from gtd.sandbox.policy.caches import _UNSAFE, CACHE_HOME, ToolCache


def layer_dir(workspace: Path) -> Path:
    """The project's upper layers (under gtd's state dir: the agent can read, never write it)."""
    from gtd import paths

    return paths.project_state_dir(workspace) / "caches"


def fallback_dir(workspace: Path) -> Path:
    """The project's own caches when overlays are impossible (outside gtd's protected state)."""
    from gtd import paths

    return paths.user_dir("cache") / "projects" / paths.project_key(workspace)


class CacheLayer:
    """One session's package caches: the overlay holder (or the fallback dirs) and how bwrap uses them."""

    def __init__(self, caches: tuple[ToolCache, ...], workspace: Path, *, layers: Path | None = None,
                 untrusted: tuple[Path, ...] = ()):
        self.caches = caches
        self.workspace = workspace
        self.untrusted = (workspace, *untrusted)  # PATH there is never searched for unshare/nsenter/mount
        self.layers = layers or layer_dir(workspace)
        self._mounted: list[ToolCache] = []
        self.mode: str = "none"  # "overlay" | "per-project" | "none"
        self.detail = ""
        self._holder: subprocess.Popen | None = None  # the holder, once its overlays are mounted
        self._nsenter: str | None = None  # found with unshare when the holder starts; each command enters by it
        self._starting: subprocess.Popen | None = None  # the holder, still mounting
        self._fstab: str | None = None
        self._lock_fd: int | None = None  # flock on the project's layers while this session uses them
        self._throwaway: Path | None = None  # this session's own layers when another session holds the project's
        self._writable: list[Path] = []
        self._env: dict[str, str] = {}

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> "CacheLayer":
        """Start the holder; its mounts finish while the session sets up the rest (see _ready)."""
        if not self.caches:
            return self
        try:
            self._start_overlay()
        except OSError as exc:
            self.detail = str(exc)
            self._start_fallback()
        return self

    def _ready(self) -> None:
        """Wait for the holder's mounts (once): overlay mode, or the fallback if they failed."""
        holder, self._starting = self._starting, None
        if holder is None:
            return
        fstab, self._fstab = self._fstab, None
        try:
            ready = holder.stdout.readline()
        finally:
            if fstab:
                os.unlink(fstab)
        if ready.strip() == b"ready":
            self._holder = holder
            self.mode = "overlay"
            self._writable = [c.path for c in self._mounted]
            return
        holder.kill()
        err = holder.stderr.read().decode(errors="replace").strip()
        _reap(holder)
        self.detail = f"overlay mount failed: {err or 'no reply'}"
        self._start_fallback()

    def close(self) -> None:
        """The holder is only a namespace anchor: killing it unmounts the overlays once no sandbox is left."""
        self._ready()
        holder, self._holder = self._holder, None
        if holder is not None:
            holder.kill()
            _reap(holder)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._throwaway is not None:
            _remove_tree(self._throwaway)
            self._throwaway = None

    # -- what the session uses --------------------------------------------------------------
    def writable(self) -> list[Path]:
        """Extra writable binds: the overlaid caches (or the per-project fallback dirs)."""
        self._ready()
        return list(self._writable)

    def environment(self) -> dict[str, str]:
        """Variables that point tools at the fallback dirs (empty in overlay mode)."""
        self._ready()
        return dict(self._env)

    def wrap(self, argv: list[str]) -> list[str]:
        """bwrap's argv, started inside the holder's mount namespace (as the same user) in overlay mode."""
        self._ready()
        if self._holder is None or not argv or os.path.basename(argv[0]) != "bwrap":
            return argv
        prefix = [self._nsenter, "-t", str(self._holder.pid), "--mount"]
        if os.geteuid() != 0:
            # The holder's user namespace maps only our uid (as 0); bwrap maps it back to who we are.
            prefix += ["--user", "--preserve-credentials"]
            return [*prefix, "--", argv[0], "--uid", str(os.getuid()), "--gid", str(os.getgid()), *argv[1:]]
        return [*prefix, "--", *argv]

    # -- overlay ------------------------------------------------------------------------------
    def _layer_base(self) -> Path:
        """The project's persistent layers, held under an exclusive lock for this session. If another gtd
        session of the project holds them (two overlays sharing an upper dir is undefined behaviour), this
        session gets a throwaway layer instead, removed when it closes."""
        import fcntl

        self.layers.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.layers / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            import tempfile  # here, as below: a readonly session (no package caches) never needs it

            self._throwaway = Path(tempfile.mkdtemp(prefix="session-", dir=self.layers))
            return self._throwaway
        self._lock_fd = fd
        return self.layers

    def _start_overlay(self) -> None:
        from gtd.host_programs import host_environment, host_program

        unshare, self._nsenter = host_program("unshare", self.untrusted), host_program("nsenter", self.untrusted)
        if unshare is None or self._nsenter is None:
            raise OSError("util-linux unshare/nsenter not found")
        base = self._layer_base()
        lines, mounted = [], []
        root = os.geteuid() == 0
        folded_into: Path | None = None  # the cache home's overlay, once mounted: caches inside it are in it
        for cache in self.caches:
            if folded_into is not None and strictly_inside(os.path.realpath(cache.path), folded_into):
                continue
            if not self._ensure_lower(cache):
                continue
            upper, work = base / cache.key / "upper", base / cache.key / "work"
            upper.mkdir(parents=True, exist_ok=True, mode=0o700)
            work.mkdir(parents=True, exist_ok=True, mode=0o700)
            lower = Path(os.path.realpath(cache.path))
            if _UNSAFE & set(str(lower) + str(base)):
                continue
            if cache.tool == CACHE_HOME:
                folded_into = lower  # first in self.caches (policy_caches puts it there)
            options = f"lowerdir={lower},upperdir={upper},workdir={work}" + ("" if root else ",userxattr")
            lines.append(f"overlay {lower} overlay {options} 0 0\n")
            mounted.append(cache)
        if not mounted:
            raise OSError("no cache could be prepared")
        import tempfile

        fd, fstab = tempfile.mkstemp(prefix="gtd-caches-", suffix=".fstab")
        try:
            with os.fdopen(fd, "w") as f:
                f.writelines(lines)
            argv = [unshare, "--mount", "--propagation", "private"]
            if not root:
                argv[1:1] = ["--user", "--map-root-user"]
            script = 'mount -a -T "$1" || exit 1; echo ready; read _ignored'
            self._starting = subprocess.Popen([*argv, "/bin/sh", "-c", script, "holder", fstab], stdin=subprocess.PIPE,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                              env=host_environment(self.untrusted))
        except OSError:
            os.unlink(fstab)
            raise
        self._fstab = fstab
        self._mounted = mounted

    @staticmethod
    def _ensure_lower(cache: ToolCache) -> bool:
        """The user's cache dir must exist to be a layer: created empty when its tool is installed (the
        tool would create it on its first run anyway), the cache home always. Never through a symlinked
        or non-directory path."""
        if os.path.isdir(cache.path):
            return True
        if os.path.lexists(cache.path):
            return False
        try:
            cache.path.mkdir(parents=True, mode=0o755)
            return True
        except OSError:
            return False

    # -- fallback -------------------------------------------------------------------------------
    def _start_fallback(self) -> None:
        base = fallback_dir(self.workspace)
        for cache in self.caches:
            if cache.env is None:
                continue  # no variable moves only the cache (cargo, gradle, maven): it stays read-only
            target = base / cache.key
            try:
                target.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError:
                continue
            self._env[cache.env] = str(target)
            self._writable.append(target)
        self.mode = "per-project" if self._writable else "none"


def _reap(holder: subprocess.Popen) -> None:
    holder.wait()
    for stream in (holder.stdin, holder.stdout, holder.stderr):
        if stream is not None:
            stream.close()


def _remove_tree(path: Path) -> None:
    """Remove a throwaway layer, overlayfs's mode-000 work dirs included (owned by us, but unreadable). The
    layer holds what the agent wrote: no symlink in it is followed (locked_tree). Best effort."""
    from gtd.sandbox.host.locked_tree import remove_tree

    try:
        remove_tree(path)
    except OSError:
        pass


def overlay_check() -> tuple[bool, str]:
    """For `gtd doctor`: mount one overlay the way sessions do, in a temp dir."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gtd-overlay-") as tmp:
        lower = Path(tmp) / "lower"
        lower.mkdir()
        layer = CacheLayer((ToolCache("probe", lower),), Path(tmp) / "ws", layers=Path(tmp) / "layers")
        try:
            layer._start_overlay()
            layer._ready()
            if layer.mode != "overlay":
                return False, layer.detail
        except OSError as exc:
            return False, str(exc)
        finally:
            layer.close()
    return True, "copy-on-write overlay per project (reads hit your caches, writes stay in gtd's state dir)"
