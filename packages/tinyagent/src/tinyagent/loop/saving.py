"""The run's saves: the pending journal on the loop's path, full trajectory rewrites in the background.

With a journal (a `TrajectoryFile` whose journal the trajectory names, `trajectory/journal.py`), every
save point first appends the messages since the previous one to the journal: a plain write at a
checkpoint, an `fdatasync`ed one for a reply whose tools are about to run. The full rewrite of the
trajectory is then handed to one worker thread (fresh mode), at most every `SNAPSHOT_INTERVAL_S`, and
never waited for on the way to a tool batch, except until the very first one landed; the journal covers
what it has not written yet, and the final save writes everything. Without
a journal (a plain save callable, or once the journal failed) the previous checkpoint is waited for
before a tool batch and the reply is saved in full, marked pending. In resume mode (`stop_on_failure`)
every full save is synchronous.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from tinyagent.loop.save_worker import SaveWorker
from tinyagent.output import Reporter
from tinyagent.trajectory.models import Trajectory

__all__ = ["SaveFn", "Saver"]

SaveFn = Callable[[Trajectory], None]

SNAPSHOT_INTERVAL_S = 1.0
"""With a journal, how often at most the whole trajectory is rewritten during a run (fresh mode)."""


class Saver:
    """Saves one run's trajectory through `save` and reports failures on stderr."""

    def __init__(
        self, save: SaveFn | None, reporter: Reporter, *, overlap: bool, stop_on_failure: bool
    ) -> None:
        self.save = save
        self.reporter = reporter
        self.overlap = overlap
        self.stop_on_failure = stop_on_failure
        self.failed = False
        self.saves = 0
        self._worker: SaveWorker | None = None
        self._journal_failed = False  # once an append failed, pending turns are saved in full
        self._journaled = -1  # messages the journal's records (or the first save) cover; -1: not started
        self._compaction: object = None  # the compacted view the journal last recorded
        self._landed = -1  # messages held by the newest full save that landed (synchronous ones)
        self._submitted_at: float | None = None  # when the newest full rewrite was handed to the worker
        self.overlap_sync = False  # the pending record's fdatasync may run while its tools start (gated)
        self._unsynced: Callable[[], None] | None = None  # the wait for that fdatasync

    # -- the journal ----------------------------------------------------------------------------
    def _journal_save(self, traj: Trajectory) -> Any:
        """The save object when its journal is usable for `traj` (named in it, not failed), else None."""
        if self._journal_failed or self.save is None:
            return None
        ref = getattr(self.save, "journal_ref", None)
        if ref is None or traj.resume is None or traj.resume.journal != ref:
            return None
        return self.save

    def _record(self, traj: Trajectory, *, pending: bool) -> bool:
        """Journal the messages since the previous record; False when there is no usable journal."""
        save = self._journal_save(traj)
        if save is None:
            return False
        from tinyagent.trajectory.journal import encode_record

        assert traj.resume is not None
        compaction = traj.resume.compaction
        try:
            if self._journaled < 0:  # the first save point: the journal starts after it
                save.journal.open()
                self._journaled, self._compaction = len(traj.messages), compaction
                if not pending:
                    return True
            changed = compaction if compaction is not self._compaction else None
            record = encode_record(
                save.journal_ref, traj, self._journaled, pending=pending, compaction=changed
            )
            if pending and self.overlap_sync:
                self._unsynced = save.journal_append(record, sync=True, overlap=True)
            else:
                save.journal_append(record, sync=pending)
        except Exception as exc:
            self._journal_broke(traj, exc)
            return False
        self._journaled, self._compaction = len(traj.messages), compaction
        return True

    def _journal_broke(self, traj: Trajectory, exc: Exception) -> None:
        self._journal_failed = True
        # the full saves from now on hold everything and name no journal (a resume never needs it)
        assert traj.resume is not None
        traj.resume = traj.resume.model_copy(update={"journal": None})
        self.reporter.warning(
            f"the pending journal failed ({exc}); the whole trajectory is saved before each tool batch"
        )

    def durability_gate(self, traj: Trajectory) -> Callable[[], bool]:
        """The wait a tool batch passes before its first effect: True once the reply `save_pending`
        saved is durable (after a failed overlapped sync: once a full save holds it), False when the
        batch must not run (that failed too, `stop_on_failure`). Waits once; later calls repeat the
        answer."""
        answers: list[bool] = []

        def gate() -> bool:
            if not answers:
                answers.append(self._await_durable(traj))
            return answers[0]

        return gate

    def _await_durable(self, traj: Trajectory) -> bool:
        wait, self._unsynced = self._unsynced, None
        if wait is None:
            return True
        try:
            wait()
            return True
        except Exception as exc:
            self._journal_broke(traj, exc)
            return self.save_now(traj, sync_directory=False) or not self.stop_on_failure

    def _maybe_erase(self, traj: Trajectory) -> None:
        """Erase a long journal once a durable full save holds every record in it."""
        from tinyagent.trajectory.journal import ROTATE_BYTES

        journal = getattr(self.save, "journal", None)
        if journal is None or journal.used <= ROTATE_BYTES:
            return
        landed = max(self._landed, self._worker.landed if self._worker is not None else -1)
        if (self._worker is None or self._worker.idle()) and landed >= self._journaled:
            journal.erase()

    # -- saves ----------------------------------------------------------------------------------
    def save_now(self, traj: Trajectory, *, sync_directory: bool = True) -> bool:
        """Synchronous full save (after any overlapped one has finished); reports a failure on stderr.

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
        except Exception as exc:
            self._report_failure(exc)
            return False
        self._landed = len(traj.messages)
        return True

    def save_pending(self, traj: Trajectory) -> bool:
        """Save the reply that ends `traj` before its tools run; False: the save failed (reported).

        With a usable journal: one fdatasynced record, once a first full save has landed. Else (or once
        the journal failed) a synchronous full save, which the caller has marked pending.
        """
        self._collect()
        if self._journal_save(traj) is not None:
            if self._landed < 0 and (self._worker is None or self._worker.landed < 0):
                self.finish_pending()  # the trajectory file must exist before any tool runs
            if self._landed >= 0 or (self._worker is not None and self._worker.landed >= 0):
                self._maybe_erase(traj)
                if self._record(traj, pending=True):
                    self.saves += 1
                    return True
                return self.save_now(traj, sync_directory=False)
        return self.save_now(traj, sync_directory=False)

    def checkpoint(self, traj: Trajectory) -> bool:
        """Save a Running checkpoint; False means the run must stop (`stop_on_failure` only).

        Without a journal, an overlapped checkpoint is collected by `finish_pending` before any tool
        runs, so no tool effect ever precedes the durable checkpoint of the turn before it; with one,
        the journal's record of the turn stands in for it until it lands.
        """
        if self.save is None:
            return True
        journaled = self._record(traj, pending=False)
        if not (self.overlap and not self.stop_on_failure):
            return self.save_now(traj) or not self.stop_on_failure
        self._collect()
        if not journaled:
            self.finish_pending()
        elif not self._snapshot_due():
            return True  # the journal holds this turn; the next full rewrite will too
        self._submitted_at = time.monotonic()
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
            self._worker = SaveWorker()
        self._worker.submit(job, len(traj.messages))
        return True

    def _snapshot_due(self) -> bool:
        """With a journal, the full rewrite runs at most every SNAPSHOT_INTERVAL_S (and whenever the
        journal is long, so that it can be erased once the rewrite landed)."""
        from tinyagent.trajectory.journal import ROTATE_BYTES

        journal = getattr(self.save, "journal", None)
        if self._submitted_at is None or (journal is not None and journal.used > ROTATE_BYTES):
            return True
        return time.monotonic() - self._submitted_at >= SNAPSHOT_INTERVAL_S

    def save_final(self, traj: Trajectory) -> bool:
        """The run's last save (its ending); it also removes the pending journal once it landed."""
        finish = getattr(self.save, "finish", None)
        if not callable(finish):
            return self.save_now(traj)
        self.finish_pending()
        self.saves += 1
        try:
            finish(traj)
        except Exception as exc:
            self._report_failure(exc)
            return False
        return True

    def finish_pending(self) -> None:
        """Wait for the overlapped saves and report their failures (main thread only)."""
        if self._worker is not None:
            self._worker.wait_idle()
        self._collect()

    def _collect(self) -> None:
        """Report the failures of overlapped saves that ended (without waiting)."""
        if self._worker is not None:
            for error in self._worker.take_errors():
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
