"""uvicorn's h11 protocol with a request read timeout and a per-process connection cap.

uvicorn times out idle keep-alive connections (``timeout_keep_alive``, our idle timeout) but waits for
ever on a client that sends its request slowly, and accepts every connection. Here a request must arrive
whole (headers and body) within ``read_timeout_s`` of the connection opening or the previous response
ending, else the connection is closed; a connection beyond ``max_connections`` is closed unserved. A
request being handled by the application is never cut off.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT_S = 30.0
"""Default time a client has to deliver one whole request."""
IDLE_TIMEOUT_S = 5.0
"""Default time an idle keep-alive connection stays open (uvicorn's ``timeout_keep_alive``)."""
MAX_CONNECTIONS = 1000
"""Default number of open connections one server process accepts."""


@dataclass
class ConnectionLimits:
    """The limits every :class:`BoundedH11Protocol` of this process applies."""

    read_timeout_s: float = READ_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS


LIMITS = ConnectionLimits()
"""Set once per server process (``graymatter serve`` and each of its workers) before it serves."""

_RECEIVING = (h11.IDLE, h11.SEND_BODY)


class BoundedH11Protocol(H11Protocol):
    """:class:`H11Protocol` that enforces :data:`LIMITS` (pass it as uvicorn's ``http`` protocol)."""

    _read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Register the connection; close it at once when the process is at its connection cap."""
        super().connection_made(transport)
        if len(self.connections) > LIMITS.max_connections:
            self.transport.close()
            return
        self._arm()

    def handle_events(self) -> None:
        """Process received data; the deadline ends once the whole request has arrived."""
        super().handle_events()
        if self.conn.their_state not in _RECEIVING:
            self._disarm()

    def on_response_complete(self) -> None:
        """The next request on this connection gets a fresh deadline."""
        self._arm()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the deadline with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(LIMITS.read_timeout_s, self._timed_out)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _timed_out(self) -> None:
        self._read_deadline = None
        if self.conn.their_state in _RECEIVING and not self.transport.is_closing():
            self.transport.close()


def configure(read_timeout_s: float, max_connections: int) -> dict[str, Any]:
    """Set this process's limits; return the uvicorn options that use them."""
    LIMITS.read_timeout_s = read_timeout_s
    LIMITS.max_connections = max_connections
    return {"http": BoundedH11Protocol}
