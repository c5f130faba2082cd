"""Background consolidation threads: one cycle per namespace at a time, a bounded number at once."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from graymatter.errors import GraymatterError
from graymatter.models import ConsolidationReport
from graymatter.store.base import Store

log = logging.getLogger("graymatter")


class BackgroundConsolidator:
    """Starts consolidation cycles in daemon threads and waits for them on close.

    ``run_cycle(agent_id)`` performs one cycle; its failures are recorded in ``last_error`` and passed to
    ``on_error`` (or logged when there is none).
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
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._inflight: set[str] = set()
        self._slots = threading.BoundedSemaphore(max_running)
        self.last_error: str | None = None
        """The latest background failure (``"summariser: ..."`` for a summariser error), else ``None``."""

    def start(self, agent_id: str) -> None:
        """Start a cycle for ``agent_id`` unless one is running, all slots are busy, or we are closed."""
        with self._lock:
            if self._closed or agent_id in self._inflight:
                return  # one cycle per namespace at a time in this process
            if not self._slots.acquire(blocking=False):
                return  # at most max_running cycles at once; extra triggers are dropped
            self._inflight.add(agent_id)
        with contextlib.suppress(GraymatterError):
            self._store.reset_write_counter(agent_id)  # writes during the cycle count towards the next one
        thread = threading.Thread(
            target=self._run, args=(agent_id,), name=f"graymatter-consolidate-{agent_id[:32]}", daemon=True
        )
        with self._lock:
            self._threads.append(thread)
        thread.start()

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
        finally:
            self._slots.release()
            with self._lock:
                self._inflight.discard(agent_id)
                with contextlib.suppress(ValueError):
                    self._threads.remove(threading.current_thread())

    def wait(self, timeout_s: float) -> None:
        """Join the running cycles, each for at most ``timeout_s``."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout_s)

    def close(self, timeout_s: float) -> None:
        """Accept no new cycles, then wait for the running ones."""
        with self._lock:
            self._closed = True
        self.wait(timeout_s)
