"""mdformat in a helper process forked at a phase's start, so its loading runs on another CPU core.

mdformat's first use costs ~60 ms of CPU (its imports: importlib.metadata, tomllib, markdown_it with
dataclasses and inspect), and a plan formats TODO.md for its first commit within ~40 ms of starting.
Loaded on a thread, that work shared the interpreter lock with the phase's own: the commit waited
~60 ms for it (issue 13). A forked helper loads it beside the phase instead, and formats on request.

Forked only where fork is safe: Linux, and a process with one thread (a fork copies the locks other
threads hold, the import lock among them). The helper keeps no file of gtd's open but its two pipes
(locks and the terminal included: it closes every other descriptor and reads /dev/null), writes
nothing, runs no atexit handler or buffered-stream flush (os._exit), dies of Ctrl-C and of gtd's
termination signals, and ends when gtd closes its request pipe (at gtd's exit at the latest, when it is
also reaped). Its answer is mdformat's own output for the text; anything that goes wrong with the
helper (none started, gone, a broken pipe) makes `format_text` return None and the caller formats in
its own process, as before.
"""

from __future__ import annotations

import os
import struct
import sys
import types

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable

_OK, _FAILED = b"o", b"x"
_LENGTH = struct.Struct(">I")

_helper: tuple[int, int, int] | None = None  # (pid, request fd, reply fd) while a helper runs


class FormatFailed(Exception):
    """mdformat raised on this text in the helper (it would have in process too)."""


def start(load: Callable[[], object]) -> bool:
    """Fork a helper that loads mdformat through `load()` (returning the module) and then formats the
    texts it is sent. Returns whether one runs; False where forking is not safe."""
    global _helper
    if _helper is not None:
        return True
    if not sys.platform.startswith("linux") or not hasattr(os, "fork") or not _only_thread():
        return False
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: never returns into gtd's code
        code = 1
        try:
            _detach(keep=(request_r, reply_w))
            _serve(load, request_r, reply_w)
            code = 0
        finally:
            os._exit(code)
    os.close(request_r)
    os.close(reply_w)
    _helper = (pid, request_w, reply_r)
    import atexit

    atexit.register(stop)
    return True


def _only_thread() -> bool:
    """Whether this process has a single thread, as the kernel counts them: threading.active_count() does
    not count threads started with _thread (gtd.background's, the proxy relay's)."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def format_text(text: str) -> str | None:
    """mdformat's output for `text` from the helper; None when there is no helper to ask. Raises
    FormatFailed when mdformat raised on it."""
    global _helper
    if _helper is None:
        return None
    _pid, request_w, reply_r = _helper
    try:
        _send(request_w, text.encode("utf-8", "surrogatepass"))
        status = _read_exactly(reply_r, 1)
        payload = _receive(reply_r) if status in (_OK, _FAILED) else None
    except OSError:
        payload = None
    if payload is None:  # the helper is gone: this process formats from now on
        stop()
        return None
    if status == _FAILED:
        raise FormatFailed(payload.decode("utf-8", "replace"))
    return payload.decode("utf-8", "surrogatepass")


def stop() -> None:
    """End the helper (closing its request pipe ends its loop) and reap it."""
    global _helper
    if _helper is None:
        return
    pid, request_w, reply_r = _helper
    _helper = None
    for fd in (request_w, reply_r):
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == 0:  # still loading mdformat, or not yet scheduled
            import signal

            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except ChildProcessError:
        pass


# -- the helper's side --------------------------------------------------------------------------


def _detach(keep: tuple[int, int]) -> None:
    """Hold nothing of gtd's: no descriptor but the two pipes (0-2 read and write /dev/null), and the
    default action for the signals gtd turns into exceptions."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != devnull:
            os.dup2(devnull, fd)
    low, high = sorted(keep)
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536)


class _OnFirstUse(types.ModuleType):
    """Stands in (in sys.modules) for a module imported but not used: the first attribute asked of it
    that a module object does not have itself imports the real module, which takes its place. (Its
    __spec__ is None, as a module's may be: an import statement asks for it, and finds no import under
    way.)"""

    def __getattr__(self, attr: str):
        import importlib

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


# Imported by mdformat's own import (plugin discovery by entry points, reading .mdformat.toml) and used by
# neither `mdformat.text` with no extensions nor code formatters named, gtd's only call: ~25 ms of the
# helper's ~85 ms. Anything that does use them gets the real modules (_OnFirstUse).
_UNUSED_BY_TEXT = ("importlib.metadata", "tomllib")


def _serve(load: Callable[[], object], request_r: int, reply_w: int) -> None:
    import importlib

    for name in _UNUSED_BY_TEXT:
        if name not in sys.modules:
            sys.modules[name] = _OnFirstUse(name)  # type: ignore[assignment]
    if isinstance(sys.modules.get("importlib.metadata"), _OnFirstUse):
        importlib.metadata = sys.modules["importlib.metadata"]  # type: ignore[attr-defined]
    mdformat = load()
    while True:
        try:
            request = _receive(request_r)
        except OSError:
            return
        if request is None:
            return
        try:
            reply = _OK + _framed(mdformat.text(request.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass"))
        except Exception as exc:  # noqa: BLE001 - told to gtd, which leaves the text as it is
            reply = _FAILED + _framed(f"{type(exc).__name__}: {exc}".encode("utf-8", "replace"))
        try:
            _write_all(reply_w, reply)
        except OSError:
            return


# -- framing: a 4-byte length, then the bytes ---------------------------------------------------------


def _framed(data: bytes) -> bytes:
    return _LENGTH.pack(len(data)) + data


def _send(fd: int, data: bytes) -> None:
    _write_all(fd, _framed(data))


def _receive(fd: int) -> bytes | None:
    """One framed message; None at end of file."""
    head = _read_exactly(fd, _LENGTH.size)
    if head is None:
        return None
    return _read_exactly(fd, _LENGTH.unpack(head)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
