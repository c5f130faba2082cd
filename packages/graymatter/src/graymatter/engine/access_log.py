"""Recall's access bookkeeping, off the answer's path: queued, then written by one worker thread.

A recall queues the ids it returned and answers; a daemon worker writes the queue (``Store.record_accesses``:
one transaction on SQLite, whatever the counts) ``DELAY_S`` after the first queued id, or at once when
``MAX_PENDING`` ids wait. Everything that shows or uses access data (``get``, listings, stats, exports,
consolidation) and ``close`` call :meth:`AccessLog.flush` first, so they see every recall made before.
An access time is the newest recall of the flushed batch (at most ``DELAY_S`` later than the real one).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

from graymatter.errors import GraymatterError
from graymatter.store.base import Store

log = logging.getLogger("graymatter")

DELAY_S = 0.5
MAX_PENDING = 1024


class AccessLog:
    """Queued access counts of one store, flushed by a lazily started daemon worker."""

    def __init__(self, store: Store, delay_s: float = DELAY_S, max_pending: int = MAX_PENDING) -> None:
        self._store = store
        self._delay_s = delay_s
        self._max_pending = max_pending
        self._pending: dict[str, int] = {}
        self._latest: datetime | None = None
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._flushing = threading.Lock()
        self._worker: threading.Thread | None = None
        self._closed = False

    def add(self, fact_ids: list[str], at: datetime) -> None:
        """Queue one access of each id at ``at``; returns at once."""
        if not fact_ids:
            return
        with self._lock:
            if self._closed:
                return
            idle = not self._pending
            for fact_id in fact_ids:
                self._pending[fact_id] = self._pending.get(fact_id, 0) + 1
            self._latest = at if self._latest is None else max(self._latest, at)
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="graymatter-access", daemon=True)
                self._worker.start()
            if idle or len(self._pending) >= self._max_pending:
                self._wake.notify()  # only a waiting worker or a full queue needs it: the delay stands

    def flush(self) -> None:
        """Write everything queued so far (in the caller's thread); errors are logged, never raised."""
        with self._flushing:
            with self._lock:
                pending, latest = self._pending, self._latest
                self._pending, self._latest = {}, None
            if not pending or latest is None:
                return
            try:
                self._store.record_accesses(pending, latest)
            except GraymatterError as exc:  # e.g. a read-only store: recall already answered
                log.warning("access bookkeeping skipped: %s", exc)

    def close(self) -> None:
        """Flush what is queued and stop the worker (later ``add`` calls are ignored)."""
        with self._lock:
            self._closed = True
            self._wake.notify()
            worker = self._worker
        if worker is not None:
            worker.join(timeout=5.0)
        self.flush()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                deadline = time.monotonic() + self._delay_s
                while not self._closed and len(self._pending) < self._max_pending:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._wake.wait(remaining)
            self.flush()
