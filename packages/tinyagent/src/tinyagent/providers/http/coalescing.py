"""http.client connections that send a request's head and body in one write."""

from __future__ import annotations

import http.client
from collections.abc import Mapping
from typing import Any

__all__ = ["CoalescingHTTPConnection", "CoalescingHTTPSConnection", "send_post"]


class CoalescingHTTPConnection(http.client.HTTPConnection):
    """A connection whose request head and body leave in one write.

    `HTTPConnection.request` sends the head and then the body with two `send` calls; while
    `coalesce` is set the first is held back and joined to the next, so the server gets the whole
    request in one segment (one syscall here, one wake-up there). `send_post` always flushes.
    """

    coalesce = False
    _held: bytes | None = None

    def send(self, data: Any) -> None:
        """Send `data`, joined to a held request head while coalescing."""
        if self.coalesce and isinstance(data, bytes | bytearray):
            if self._held is None:
                self._held = bytes(data)
                return
            data, self._held = self._held + bytes(data), None
        elif self._held is not None:
            held, self._held = self._held, None
            super().send(held)
        super().send(data)

    def flush_held(self) -> None:
        """Send a held request head (a body-less request leaves one)."""
        held, self._held = self._held, None
        if held is not None:
            super().send(held)


class CoalescingHTTPSConnection(CoalescingHTTPConnection, http.client.HTTPSConnection):
    """The TLS form of CoalescingHTTPConnection."""


def send_post(
    conn: CoalescingHTTPConnection, target: str, payload: bytes, headers: Mapping[str, str]
) -> None:
    """POST `payload` on `conn`, head and body in one write."""
    conn.coalesce = True
    try:
        conn.request("POST", target, body=payload, headers=dict(headers))
        conn.coalesce = False
        conn.flush_held()  # a body-less request leaves its head held
    finally:
        conn.coalesce = False
        conn._held = None
