"""A Server-Sent Events parser (WHATWG event-stream rules) for streamed model responses.

Handles LF, CRLF and lone-CR line endings (also when split across network chunks), comment lines
(starting with ":"), multi-line `data:` fields (joined with "\\n"), `event:` names and `id:`.
An event is dispatched at a blank line; a trailing event without its blank line is discarded at
end of stream, as the specification requires.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tinyagent.errors import TinyAgentError

__all__ = ["MAX_PENDING", "SSEError", "SSEEvent", "SSEParser", "iter_sse", "iter_sse_bytes"]

MAX_PENDING = 16 * 1024 * 1024  # bytes of one unfinished line or event; more is a broken stream


class SSEError(TinyAgentError, ValueError):
    """The stream cannot be a sane event stream (a line or event beyond MAX_PENDING)."""


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event. `event` is None when the stream gave no `event:` field."""

    data: str
    event: str | None = None
    id: str | None = None


class SSEParser:
    """Incremental parser: feed text chunks, get complete events back."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self._max_pending = max_pending
        self._pending_size = 0
        self._buffer = ""
        self._data: list[str] = []
        self._event: str | None = None
        self._last_id: str | None = None
        self._pending_cr = False

    def feed(self, chunk: str) -> list[SSEEvent]:
        """Consume a chunk of decoded text; return the events it completed."""
        if self._pending_cr:
            # A CR ended the previous chunk: a following LF belongs to the same line ending.
            if chunk.startswith("\n"):
                chunk = chunk[1:]
            self._pending_cr = False
        text = self._buffer + chunk
        events: list[SSEEvent] = []
        start = 0
        length = len(text)
        i = 0
        while i < length:
            ch = text[i]
            if ch == "\n" or ch == "\r":
                line = text[start:i]
                if ch == "\r":
                    if i + 1 < length:
                        if text[i + 1] == "\n":
                            i += 1
                    else:
                        self._pending_cr = True
                event = self._line(line)
                if event is not None:
                    events.append(event)
                start = i + 1
            i += 1
        self._buffer = text[start:]
        if len(self._buffer) + self._pending_size > self._max_pending:
            raise SSEError(f"an event exceeds {self._max_pending} characters")
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._pending_size += len(value) + 1
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        # "retry" and unknown fields are ignored.
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._data, self._event, self._pending_size = [], None, 0
        if not data:
            return None
        return SSEEvent(data="\n".join(data), event=event or None, id=self._last_id)


def iter_sse(chunks: Iterable[str], max_pending: int = MAX_PENDING) -> Iterator[SSEEvent]:
    """Parse an iterable of text chunks into events."""
    parser = SSEParser(max_pending)
    for chunk in chunks:
        yield from parser.feed(chunk)


def iter_sse_bytes(chunks: Iterable[bytes], max_pending: int = MAX_PENDING) -> Iterator[SSEEvent]:
    """Parse raw bytes (UTF-8, possibly split inside a character) into events."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    parser = SSEParser(max_pending)
    for chunk in chunks:
        text = decoder.decode(chunk)
        if text:
            yield from parser.feed(text)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield from parser.feed(tail)
