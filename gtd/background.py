"""A function run on a new thread without waiting for the thread to be scheduled.

threading.Thread.start() waits until the new thread runs (a context switch: several ms on a busy
machine). The threads on `gtd sandbox run`'s start-up path (the cgroup moves, the gateway's start, the
stderr tap) need not have started before gtd goes on, only be waited for when their work is needed.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (issue 13: start-up)
if TYPE_CHECKING:
    from typing import Callable


class Background:
    """fn(*args) on a new thread (not waited for at exit, as a daemon thread); join() returns once fn is
    done. If fn raised, `on_error` is called (on that thread); without one, join() raises fn's error, and
    an error nobody joined is reported on stderr when the Background is dropped (sys.unraisablehook, as
    for errors in __del__): it never vanishes (a cgroup attach that failed would have let the command run
    outside its limits)."""

    def __init__(self, fn, *args, on_error: Callable[[BaseException], None] | None = None):
        import _thread

        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._fn, self._args, self._on_error = fn, args, on_error
        self._error: BaseException | None = None
        self._ident: int | None = None
        _thread.start_new_thread(self._run, ())

    def _run(self) -> None:
        import _thread

        self._ident = _thread.get_ident()
        try:
            self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - on_error's, or raised by join()
            if self._on_error is not None:
                self._on_error(exc)
            else:
                self._error = exc
        finally:
            self._done.release()
            # The kept error's traceback holds this frame: without `self` in it, a Background nobody joins is
            # freed (and its error reported) as this thread ends, not at some later cyclic collection.
            del self

    def join(self, timeout: float = -1) -> None:
        """Wait for fn (at most `timeout` seconds); fn's error, if it raised, is raised here (once)."""
        if self._done.acquire(timeout=timeout):
            self._done.release()
            error, self._error = self._error, None
            if error is not None:
                raise error

    @property
    def done(self) -> bool:
        """Whether fn has returned (or raised)."""
        return not self._done.locked()

    def running_here(self) -> bool:
        """Whether the caller is fn's own thread (which must not join itself)."""
        import _thread

        return self._ident == _thread.get_ident()

    @staticmethod
    def report(exc: BaseException) -> None:
        """An `on_error` for a loop nobody waits on: its error on stderr, as threading.Thread reports one."""
        import traceback

        traceback.print_exception(exc)

    def __del__(self) -> None:
        if self._error is not None:  # dropped without join(): raised here, Python reports it on stderr
            error, self._error = self._error, None
            raise error


