"""A streamed response body as decoded chunks, and the drain that lets its connection be reused."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator

from tinyagent.providers.http.connection import KeepAlive
from tinyagent.providers.http.decoding import ContentDecoder, DecodeError
from tinyagent.providers.http.errors import TransportError
from tinyagent.providers.sse import SSEError, SSEEvent

__all__ = ["DRAIN_GRACE_S", "BodyStream"]

DRAIN_GRACE_S = 2.0


class BodyStream:
    """The decoded chunks of a streamed body; `drain` reads what follows the terminal event."""

    def __init__(self, link: KeepAlive, response: http.client.HTTPResponse) -> None:
        self._link = link
        self._response = response
        self._decoder = ContentDecoder(response.getheader("content-encoding"))
        self._deadline: float | None = None
        self.complete = False

    def __iter__(self) -> Iterator[bytes]:
        while True:
            if self._deadline is not None:
                remaining = self._deadline - time.monotonic()
                sock = self._link.conn.sock if self._link.conn is not None else None
                if remaining <= 0 or sock is None:
                    raise TransportError("timed out", "drain")
                sock.settimeout(remaining)
            chunk = self._link.read(self._response, 65536)
            if not chunk:
                self.complete = True
                return
            data = self._decoder.feed(chunk)
            if data:
                yield data

    def drain(self, events: Iterator[SSEEvent], limit: int = 1000) -> None:
        """Read what follows the terminal event (normally just the end of the body) so the connection
        can be reused, as the OpenAI SDK does.

        The reply is already complete, so a failure here is ignored, and a server that keeps the body
        open after its terminator is cut off after DRAIN_GRACE_S (the connection is then discarded,
        never reused). No thread or timer: each read waits at most until the deadline.
        """
        self._deadline = time.monotonic() + DRAIN_GRACE_S
        try:
            for count, _ in enumerate(events):
                if count >= limit:
                    break
        except (TransportError, DecodeError, SSEError):
            pass
        self._link.finished(self._response, complete=self.complete)
