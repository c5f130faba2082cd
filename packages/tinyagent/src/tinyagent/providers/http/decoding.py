"""Incremental decoding of `Content-Encoding: gzip | deflate` response bodies."""

from __future__ import annotations

import zlib

from tinyagent.errors import TinyAgentError

__all__ = ["ContentDecoder", "DecodeError"]


class DecodeError(TinyAgentError):
    """A compressed response body could not be decoded."""


class ContentDecoder:
    """Undo `Content-Encoding: gzip|deflate` incrementally (identity passes through)."""

    def __init__(self, encoding: str | None) -> None:
        encoding = (encoding or "identity").strip().lower()
        if encoding in ("", "identity"):
            self._z = None
        elif encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped (raw deflate retried below)
        else:
            raise DecodeError(f"unsupported content-encoding {encoding!r}")
        self._deflate = encoding == "deflate"
        self._started = False

    def feed(self, data: bytes) -> bytes:
        """The decoded bytes of the next chunk (possibly empty)."""
        if self._z is None:
            return data
        try:
            out = self._z.decompress(data)
        except zlib.error as exc:
            if self._deflate and not self._started:  # some servers send raw deflate
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                self._deflate = False
                return self.feed(data)
            raise DecodeError(str(exc)) from None
        self._started = True
        return out
