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
    done. `on_error` is called (on that thread) if fn raised."""

    def __init__(self, fn, *args, on_error: Callable[[BaseException], None] | None = None):
        import _thread

        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._fn, self._args, self._on_error = fn, args, on_error
        _thread.start_new_thread(self._run, ())

    def _run(self) -> None:
        try:
            self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - fn's errors are its own business, or on_error's
            if self._on_error is not None:
                self._on_error(exc)
        finally:
            self._done.release()

    def join(self, timeout: float = -1) -> None:
        if self._done.acquire(timeout=timeout):
            self._done.release()
