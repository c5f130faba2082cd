"""The pending journal's sync thread: an `fdatasync` that runs while the loop starts the reply's command.

One long-lived daemon thread per journal (started on first use, so a handover costs a queue put, not a
thread start). `fdatasync` releases the GIL, so the loop's own work (spawning bash, see
`tinyagent.tools.gate`) goes on while the disk flushes. The journal waits for the ticket before it
writes again, erases or closes, so the descriptor is never used by both threads at once.
"""

from __future__ import annotations

import os
import queue
import threading

__all__ = ["SyncTicket", "Syncer"]


class SyncTicket:
    """One `fdatasync` handed to the sync thread; `wait` returns its error (None: it succeeded)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._done = threading.Event()
        self._error: OSError | None = None

    def finish(self, error: OSError | None) -> None:
        """Record the outcome (sync thread) and wake the waiter."""
        self._error = error
        self._done.set()

    def wait(self) -> OSError | None:
        """Block until the sync finished; its error, or None."""
        self._done.wait()
        return self._error


class Syncer:
    """A daemon thread running the `fdatasync`s handed to it, in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[SyncTicket] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="tinyagent-sync", daemon=True).start()

    def submit(self, fd: int) -> SyncTicket:
        """Start `fdatasync(fd)` on the thread; the caller keeps `fd` open until the ticket finished."""
        ticket = SyncTicket(fd)
        self._jobs.put(ticket)
        return ticket

    def _serve(self) -> None:
        while True:
            ticket = self._jobs.get()
            try:
                os.fdatasync(ticket.fd)
            except OSError as exc:
                ticket.finish(exc)
            else:
                ticket.finish(None)
