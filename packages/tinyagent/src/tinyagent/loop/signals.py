"""SIGINT/SIGTERM and the wall-time alarm of a run: handlers installed for its duration, and Abort."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from tinyagent.trajectory.models import ExitStatus

__all__ = ["Abort", "Handler", "stop_and_alarm_handlers"]

Handler = Callable[[int, object], None]


class Abort(BaseException):
    """Raised from a signal handler to abandon a model request in flight."""

    def __init__(self, status: ExitStatus, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@contextlib.contextmanager
def stop_and_alarm_handlers(
    on_stop: Handler, on_alarm: Handler, time_limit: float, *, enabled: bool = True
) -> Iterator[None]:
    """SIGINT/SIGTERM go to `on_stop`; with a `time_limit` (> 0 s) SIGALRM goes to `on_alarm` when it
    is up. The previous handlers come back on exit. Off (a no-op) outside the main thread."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, on_stop),
        signal.SIGTERM: signal.signal(signal.SIGTERM, on_stop),
    }
    if time_limit > 0:
        previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        yield
    finally:
        if time_limit > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
