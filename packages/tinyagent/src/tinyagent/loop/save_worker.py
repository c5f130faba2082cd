"""The thread that writes a run's checkpoints: one at a time, and only the newest one waiting."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["SaveWorker"]


class SaveWorker:
    """One daemon thread running the checkpoint writes handed to it, newest first: a checkpoint handed over
    while another is being written replaces any that is still waiting (it holds all of it).

    Long-lived so that handing over a checkpoint costs a lock, not a thread start. `landed` is the
    `covers` of the newest write that succeeded (-1: none yet); errors are kept until `take_errors`.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next: tuple[Callable[[], None], int] | None = None
        self._busy = False
        self._closed = False
        self._errors: list[BaseException] = []
        self.landed = -1
        self._thread = threading.Thread(target=self._serve, name="tinyagent-save", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None], covers: int) -> None:
        """Write `job` next (replacing a waiting one); `covers`: how many messages it holds."""
        with self._cond:
            self._next = (job, covers)
            self._cond.notify_all()

    def idle(self) -> bool:
        """Nothing is being written and nothing waits."""
        with self._cond:
            return self._next is None and not self._busy

    def wait_idle(self) -> None:
        """Block until every handed-over checkpoint was written (or failed)."""
        with self._cond:
            while self._next is not None or self._busy:
                self._cond.wait()

    def take_errors(self) -> list[BaseException]:
        """The failures since the last call, oldest first."""
        with self._cond:
            errors, self._errors = self._errors, []
            return errors

    def close(self) -> None:
        """Finish what was handed over, then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _serve(self) -> None:
        while True:
            with self._cond:
                while self._next is None and not self._closed:
                    self._cond.wait()
                if self._next is None:
                    return
                (job, covers), self._next = self._next, None
                self._busy = True
            error: BaseException | None = None
            try:
                job()
            except BaseException as exc:  # reported by the main thread; never lost
                error = exc
            with self._cond:
                self._busy = False
                if error is None:
                    self.landed = max(self.landed, covers)
                else:
                    self._errors.append(error)
                self._cond.notify_all()
