"""MCP messages read from a stdin pipe on the event loop itself, one bounded line at a time.

The SDK's stdio transport reads each line in a worker thread (``anyio.wrap_file``), hands it to its reader
task, which validates it and passes it through a memory stream to the server loop: per request a thread
wake-up, a wake-up of the loop through its self-pipe and two task switches, about a third of what a bare
``ping`` costs the server. :class:`StdinLines` is the read stream the SDK's loop pulls from instead: when
no whole line is buffered it waits until the descriptor is readable (the loop's own ``epoll``), reads what
the pipe holds (up to 64 KiB) and splits lines itself. Each line is validated exactly as the SDK does
(``jsonrpc_message_adapter.validate_json``); a line that is no JSON-RPC message comes out as the exception,
which :class:`~graymatter.faces.mcp_server.stdio.AnsweringReadStream` answers.

Lines are bounded (:data:`MAX_LINE_BYTES`, counted while reading): a longer line is skipped to its end
without being kept and comes out as :class:`LineTooLong`, answered ``-32600``. The descriptor is never put
in non-blocking mode (it may be shared with other processes): it is read only after ``epoll`` said it is
readable, and a pipe, socket or terminal then returns what it holds. Anything else (a regular file,
``/dev/null``) cannot be waited on, so :func:`waitable` sends those to the SDK's own transport.
"""

from __future__ import annotations

import os
import stat
from typing import Any

READ_CHUNK = 1 << 16
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSON-RPC line read from stdin (64 MiB: a checkpoint state well over any client's message
limit); a longer line is refused with ``-32600`` and skipped, never kept in memory."""


class LineTooLong(ValueError):
    """A stdin line over the reader's bound (skipped unread to its end)."""

    def __init__(self, bound: int) -> None:
        super().__init__(f"a JSON-RPC line over {bound} bytes was skipped")


def waitable(fd: int) -> bool:
    """Whether ``fd`` is a pipe, socket or terminal, which the event loop can wait on."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


def parse_message(line: bytes) -> Any:
    """``line`` as the SDK's transport parses it: a :class:`~mcp.shared.message.SessionMessage`, or the
    exception that says why it is none (invalid UTF-8 is replaced, as the SDK's text reader does)."""
    import mcp_types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    adapter = mcp_types.jsonrpc_message_adapter
    try:
        return SessionMessage(adapter.validate_json(line, by_name=False))
    except ValidationError as exc:
        try:
            line.decode()
        except UnicodeDecodeError:
            return parse_message(line.decode(errors="replace").encode())
        return exc


class PullStream:
    """A read stream as the SDK's loop consumes it: ``receive`` (``anyio.EndOfStream`` at the end) is the
    whole stream; iteration and ``async with`` (which closes it) come from here."""

    async def receive(self) -> Any:
        """The next item (subclasses)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the stream (subclasses)."""
        raise NotImplementedError

    def __aiter__(self) -> PullStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> PullStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class StdinLines(PullStream):
    """The read stream of one stdio session: messages (or the exception of an unreadable line) in order,
    ``anyio.EndOfStream`` once stdin is closed. ``last_context`` is ``None``: the SDK's loop then runs a
    request in its own context, as it does for any stream without a sender context."""

    last_context: Any = None

    def __init__(self, fd: int, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._fd = fd
        self._bound = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0
        """How much of the buffer is known to hold no line break (a long line is scanned once)."""
        self._skipping = False
        self._ended = False

    async def receive(self) -> Any:
        """The next message, or the exception of the next unreadable line."""
        import anyio

        while True:
            line = self._next_line()
            if line is not None:
                return line if isinstance(line, LineTooLong) else parse_message(line)
            if self._ended:
                raise anyio.EndOfStream
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, READ_CHUNK)
            except OSError:  # the descriptor is gone (a hung-up terminal): the session ends, as at EOF
                chunk = b""
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        if not chunk:
            self._ended = True
        elif self._skipping:
            end = chunk.find(b"\n")
            if end >= 0:
                self._skipping = False
                self._buffer += chunk[end + 1 :]
        else:
            self._buffer += chunk

    def _next_line(self) -> bytes | LineTooLong | None:
        """A whole line from the buffer (its ``\\n``, and a ``\\r`` before it, removed), a
        :class:`LineTooLong` for one over the bound, or ``None`` when more must be read."""
        end = self._buffer.find(b"\n", self._scanned)
        if end < 0:
            self._scanned = len(self._buffer)
            if len(self._buffer) > self._bound:
                self._buffer.clear()
                self._scanned = 0
                self._skipping = True
                return LineTooLong(self._bound)
            if not self._ended or not self._buffer:
                return None
            end = len(self._buffer)  # the last line, unterminated at the end of stdin
        self._scanned = 0
        if end > self._bound:
            del self._buffer[: end + 1]
            return LineTooLong(self._bound)
        with memoryview(self._buffer) as view:
            line = bytes(view[:end])
        del self._buffer[: end + 1]
        return line[:-1] if line.endswith(b"\r") else line

    async def aclose(self) -> None:
        """Stop reading (the descriptor is the claim's, released by the caller)."""
        self._ended = True
        self._buffer.clear()


__all__ = ["MAX_LINE_BYTES", "LineTooLong", "PullStream", "StdinLines", "parse_message", "waitable"]
