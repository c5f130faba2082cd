"""Background consolidation workers: one cycle per namespace at a time, a bounded number at once."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable

from graymatter.errors import GraymatterError
from graymatter.models import ConsolidationReport
from graymatter.store.base import Store

log = logging.getLogger("graymatter")

_STOP = ""
"""What a worker reads as "exit" (an agent id is never empty)."""


class BackgroundConsolidator:
    """Runs consolidation cycles on long-lived daemon worker threads and waits for them on close.

    At most ``max_running`` workers exist, started when first needed and kept: each keeps its store
    connection, so a cycle costs neither a thread start nor a connection opened (and never closed until
    the store closes) as one thread per cycle did. ``run_cycle(agent_id)`` performs one cycle; its
    failures are recorded in ``last_error`` and passed to ``on_error`` (or logged when there is none).
    """

    def __init__(
        self,
        store: Store,
        run_cycle: Callable[[str], ConsolidationReport],
        max_running: int,
        on_error: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self._store = store
        self._run_cycle = run_cycle
        self._on_error = on_error
        self._closed = False
        self._max_running = max_running
        self._workers: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._inflight: set[str] = set()
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.last_error: str | None = None
        """The latest background failure (``"summariser: ..."`` for a summariser error), else ``None``."""

    def start(self, agent_id: str) -> None:
        """Start a cycle for ``agent_id`` unless one is running, all slots are busy, or we are closed."""
        with self._lock:
            if self._closed or agent_id in self._inflight:
                return  # one cycle per namespace at a time in this process
            if len(self._inflight) >= self._max_running:
                return  # at most max_running cycles at once; extra triggers are dropped
            self._inflight.add(agent_id)
            spawn = self._idle == 0
            self._idle -= 0 if spawn else 1
        with contextlib.suppress(GraymatterError):
            self._store.reset_write_counter(agent_id)  # writes during the cycle count towards the next one
        if spawn:
            worker = threading.Thread(target=self._work, name="graymatter-consolidate", daemon=True)
            with self._lock:
                self._workers.append(worker)
            worker.start()
        self._queue.put(agent_id)

    def _work(self) -> None:
        """A worker: run the cycles handed to it until told to stop."""
        while (agent_id := self._queue.get()) != _STOP:
            try:
                self._run(agent_id)
            finally:
                with self._lock:
                    self._inflight.discard(agent_id)
                    self._idle += 1
                    self._done.notify_all()

    def _run(self, agent_id: str) -> None:
        try:
            report = self._run_cycle(agent_id)
            if report.summariser_error:
                self.last_error = f"summariser: {report.summariser_error}"
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            if self._on_error is not None:
                self._on_error(agent_id, exc)
            else:
                log.warning("background consolidation of %r failed: %s", agent_id, exc)

    def wait(self, timeout_s: float) -> None:
        """Block until no cycle is running, for at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._inflight and (left := deadline - time.monotonic()) > 0:
                self._done.wait(left)

    def close(self, timeout_s: float) -> None:
        """Accept no new cycles, wait for the running ones, then let the workers exit."""
        with self._lock:
            self._closed = True
        self.wait(timeout_s)
        with self._lock:
            workers = list(self._workers)
        for _ in workers:
            self._queue.put(_STOP)
        for worker in workers:
            if not self._inflight:
                worker.join(1.0)
