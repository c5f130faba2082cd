"""The run's saves: synchronous, or a checkpoint's durable write overlapped with the next request."""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
from collections.abc import Callable, Iterator

from tinyagent.output import Reporter
from tinyagent.trajectory.models import Trajectory

__all__ = ["SaveFn", "Saver"]

SaveFn = Callable[[Trajectory], None]


class Saver:
    """Saves one run's trajectory through `save` and reports failures on stderr.

    In fresh mode (`overlap`, not `stop_on_failure`) a checkpoint is encoded now (or, for a plain
    save callable, snapshotted) and its durable write runs in one worker thread, overlapping the next
    model request; `finish_pending` waits for it. Every other save is synchronous.
    """

    def __init__(
        self, save: SaveFn | None, reporter: Reporter, *, overlap: bool, stop_on_failure: bool
    ) -> None:
        self.save = save
        self.reporter = reporter
        self.overlap = overlap
        self.stop_on_failure = stop_on_failure
        self.failed = False
        self.saves = 0
        self._worker: _SaveWorker | None = None
        self._pending = False  # a checkpoint was handed to the worker and not yet collected
        self._journal_failed = False  # once an append failed, pending turns are saved in full

    def save_now(self, traj: Trajectory, *, sync_directory: bool = True) -> bool:
        """Synchronous save (after any overlapped one has finished); reports a failure on stderr.

        `sync_directory=False` (the save before a tool batch): the data is fsynced but not the rename,
        which the next save makes durable; a plain save callable always does its own full write.
        """
        self.finish_pending()
        if self.save is None:
            return True
        self.saves += 1
        try:
            encode, write = getattr(self.save, "encode", None), getattr(self.save, "write", None)
            if not sync_directory and callable(encode) and callable(write):
                write(encode(traj), sync_directory=False)
            else:
                self.save(traj)
            return True
        except Exception as exc:
            self._report_failure(exc)
            return False

    def save_pending(self, traj: Trajectory) -> bool:
        """Save the reply that ends `traj` before its tools run; False: the save failed (reported).

        With a journal the trajectory names (`resume.journal`), one appended record, fdatasynced; else
        (or once the journal failed) a synchronous full save, which the caller has marked pending.
        """
        self.finish_pending()  # the journal is appended only after the previous full save landed
        if self.save is None:
            return True
        append = getattr(self.save, "append_pending", None)
        ref = getattr(self.save, "journal_ref", None)
        if callable(append) and ref is not None and traj.resume is not None and traj.resume.journal == ref:
            if not self._journal_failed:
                self.saves += 1
                try:
                    append(traj)
                    return True
                except Exception as exc:
                    self._journal_failed = True
                    journal_error: Exception | None = exc
            else:
                journal_error = None
            ok = self.save_now(traj, sync_directory=False)
            if ok and journal_error is not None:
                self.reporter.warning(
                    f"the pending journal failed ({journal_error}); the whole trajectory is saved before "
                    "each tool batch instead"
                )
            return ok
        return self.save_now(traj, sync_directory=False)

    def save_final(self, traj: Trajectory) -> bool:
        """The run's last save (its ending); it also removes the pending journal once it landed."""
        finish = getattr(self.save, "finish", None)
        if not callable(finish):
            return self.save_now(traj)
        self.finish_pending()
        self.saves += 1
        try:
            finish(traj)
            return True
        except Exception as exc:
            self._report_failure(exc)
            return False

    def checkpoint(self, traj: Trajectory) -> bool:
        """Save a Running checkpoint; False means the run must stop (`stop_on_failure` only).

        An overlapped checkpoint is collected by `finish_pending` before any tool runs and before
        any other save, so no tool effect ever precedes the durable checkpoint of the turn before it.
        """
        if self.save is not None and self.overlap and not self.stop_on_failure:
            self.finish_pending()
            self.saves += 1
            encode, write = getattr(self.save, "encode", None), getattr(self.save, "write", None)
            if callable(encode) and callable(write):
                # Encoding here, not in the worker, keeps the worker off the GIL while this thread
                # builds and sends the next request; the worker only does the durable write.
                try:
                    job = functools.partial(write, encode(traj))
                except Exception as exc:
                    self._report_failure(exc)
                    return True
            else:
                job = functools.partial(self.save, snapshot(traj))
            if self._worker is None:
                self._worker = _SaveWorker()
            self._worker.submit(job)
            self._pending = True
            return True
        ok = self.save_now(traj)
        return ok or not self.stop_on_failure

    def finish_pending(self) -> None:
        """Wait for an overlapped save and report its failure (main thread only)."""
        if not self._pending or self._worker is None:
            return
        self._pending = False
        error = self._worker.result()
        if error is not None:
            self._report_failure(error)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """The worker of this run is stopped when the run returns (it is started on first use)."""
        try:
            yield
        finally:
            self.finish_pending()
            worker, self._worker = self._worker, None
            if worker is not None:
                worker.close()

    def _report_failure(self, exc: BaseException) -> None:
        self.failed = True
        self.reporter.error(f"could not save the trajectory: {exc}")


def snapshot(traj: Trajectory) -> Trajectory:
    """A copy safe to serialise while the loop goes on: every container the loop mutates is copied.

    Messages are never mutated after they are appended, so they are shared, not deep-copied.
    """
    return traj.model_copy(
        update={
            "messages": list(traj.messages),
            "totals": traj.totals.model_copy(),
            "limits": traj.limits.model_copy(),
            "timing": traj.timing.model_copy(),
            "warnings": list(traj.warnings),
            "resumed_from": list(traj.resumed_from),
        }
    )


class _SaveWorker:
    """One daemon thread running the checkpoint writes handed to it, in order, one at a time.

    Long-lived so that handing over a checkpoint costs a queue put, not a thread start (which waits
    for the new thread to be scheduled and then for the GIL to come back).
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._results: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="tinyagent-save", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def result(self) -> BaseException | None:
        """Wait for the oldest submitted save; its exception, or None when it succeeded."""
        return self._results.get()

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except BaseException as exc:  # reported by the main thread; never lost
                self._results.put(exc)
            else:
                self._results.put(None)
