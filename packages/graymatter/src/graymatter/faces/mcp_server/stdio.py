"""MCP over stdio on the SDK's server loop: stdin read and answers written on the loop, every line answered.

The SDK's stdio transport hands a line it cannot parse to the server loop as an exception, which drops it:
the client then waits for its timeout. Here such a line is answered at once with ``-32700 Parse error``
(not JSON) or ``-32600 Invalid Request`` (JSON, but no JSON-RPC message, or a line over the reader's
bound), ``id`` null as JSON-RPC 2.0 says when the id cannot be read (:class:`AnsweringReadStream`). The
SDK's loop dispatches every request; around it, a stdin pipe is read on the event loop itself
(:class:`~graymatter.faces.mcp_server.stdin_lines.StdinLines`; a file or ``/dev/null`` goes to the SDK's
own reader), answers are dumped to bytes and written from the loop instead of a writer task and a worker
thread (:class:`InlineStdout`) and the tool bodies run on the loop too (``run_tools_inline``). The
collector is tuned for serving (:func:`tune_collector`). Logging goes to stderr, one line per event (the
SDK's default is a multi-line rich console).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from graymatter.faces.mcp_server.stdin_lines import PullStream

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import JSONRPCError

JOIN_BELOW_BYTES = 1 << 20
"""An answer line shorter than this is joined into one write; a longer one (a large spliced result) is
written piece by piece instead of being copied once more."""
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class OneLineFormatter(logging.Formatter):
    """``level logger: first line of the message [exception type]``: never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line = f"{record.levelname.lower()} {record.name}: {message.splitlines()[0] if message else ''}"
        if record.exc_info and record.exc_info[0] is not None:
            line += f" [{record.exc_info[0].__name__}]"
        return line


def configure_stderr_logging(level: int = logging.WARNING) -> None:
    """One line per log event on stderr, for every logger (installed before the SDK configures its own)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)


def rejection(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error answering a line the transport could not read as a message."""
    from mcp_types import ErrorData, JSONRPCError
    from pydantic import ValidationError

    unparsable = isinstance(exc, ValidationError) and any(e["type"] == "json_invalid" for e in exc.errors())
    error = (
        ErrorData(code=PARSE_ERROR, message="Parse error")
        if unparsable
        else ErrorData(code=INVALID_REQUEST, message="Invalid Request")
    )
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


class InlineStdout:
    """Stdout, written from the event loop itself: the SDK loop's write stream, and the transport's stdout.

    The SDK's transport hands every answer to a writer task, which dumps the message to a ``str`` and
    hands the line to a worker thread twice (``write``, then ``flush``), where it is encoded again: a
    task switch, two thread wake-ups and two copies of the line per answer. Here the server loop sends
    into this object directly (:meth:`send`): the message is dumped to bytes by its own pydantic
    serializer (the bytes of the SDK's ``model_dump_json(by_alias=True, exclude_unset=True)``), the
    fragments a tool result left in :attr:`splices` (its text and structured content, serialised once)
    are spliced in, and the line is written and flushed at once. Each line is written whole without an
    await in between, so concurrent answers never interleave; a client that stops reading its stdout
    blocks the server either way (the SDK's write stream holds no buffer). The transport's own stdout
    calls (:meth:`write`, :meth:`flush`) stay for the SDK's duck type.
    """

    def __init__(self, buffer: BinaryIO) -> None:
        from graymatter.faces.mcp_server.wire import Splices

        self._buffer: BinaryIO | None = buffer
        self.splices = Splices()
        """Fragments the answers' lines get after dumping (a result's text and structured content)."""

    def _wire(self) -> BinaryIO:
        if self._buffer is None:
            import anyio

            raise anyio.ClosedResourceError
        return self._buffer

    async def send(self, item: Any) -> None:
        """Write ``item`` (a :class:`~mcp.shared.message.SessionMessage`) as one JSON line and flush it."""
        message = item.message
        data = message.__pydantic_serializer__.to_json(message, by_alias=True, exclude_unset=True)
        wire = self._wire()
        pieces = [*self.splices.pieces(data), b"\n"]
        if sum(map(len, pieces)) < JOIN_BELOW_BYTES:
            wire.write(b"".join(pieces))  # one write: the client wakes once, for a whole line
        else:
            for piece in pieces:  # no copy of a large fragment; the pipe takes them in order
                wire.write(piece)
        wire.flush()

    async def write(self, data: str) -> None:
        """Write ``data`` (one JSON line) to the buffer."""
        self._wire().write(data.encode())

    async def flush(self) -> None:
        """Push what was written into the pipe."""
        self._wire().flush()

    async def aclose(self) -> None:
        """End this write stream: later sends raise ``ClosedResourceError`` (the SDK's loop expects it)."""
        self.close()

    async def __aenter__(self) -> InlineStdout:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Stop writing to the buffer, which is not ours to close."""
        self._buffer = None


def _claim_stdout() -> tuple[InlineStdout, Callable[[], None] | None]:
    """Stdout claimed as the SDK claims it (fd 1 points at stderr while serving, the wire is a private
    duplicate, restored by the returned release), wrapped in :class:`InlineStdout`."""
    from mcp.server import stdio as sdk_stdio

    buffer, release = sdk_stdio._claim_fd(1, sys.stdout, "wb", sdk_stdio._open_stdout_diversion)
    widen_pipe(buffer.fileno())
    return InlineStdout(buffer), release


PIPE_BYTES = 1 << 20
"""The capacity asked for a stdio pipe (Linux's default limit for an unprivileged process; 64 KiB is the
default capacity)."""


def widen_pipe(fd: int) -> None:
    """Give the pipe behind ``fd`` a capacity of :data:`PIPE_BYTES`, where the system allows it.

    A 2 MB answer line (a 1 MB checkpoint state and its text) then crosses in a few writes instead of ~30
    rounds of "pipe full, wake the reader, wait": on two busy cores the structured 1 MB resume went from
    4.2-4.5x to 3.2-3.4x in-process. Anything else than a pipe, or a refusal (a user past
    ``pipe-user-pages-soft``), leaves the descriptor as it was; only memory use differs.
    """
    import fcntl
    import os
    import stat

    setter = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    try:
        if setter is not None and stat.S_ISFIFO(os.fstat(fd).st_mode):
            fcntl.fcntl(fd, setter, PIPE_BYTES)
    except OSError:
        pass


async def _serve(server: MCPServer) -> None:
    from graymatter.faces.mcp_server.stdin_lines import waitable
    from graymatter.faces.mcp_server.wire import SPLICES

    lowlevel: Any = server._lowlevel_server  # the SDK keeps the loop's server private
    stdout, release = _claim_stdout()
    SPLICES.set(stdout.splices)  # the request tasks started below inherit it
    try:
        if waitable(_stdin_fd()):
            await _serve_pipe(lowlevel, stdout)
        else:
            await _serve_sdk_reader(lowlevel, stdout)
    finally:
        stdout.close()
        if release is not None:
            release()


def _stdin_fd() -> int:
    """The descriptor behind ``sys.stdin``, or -1 when there is none."""
    try:
        return sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return -1


async def _serve_pipe(lowlevel: Any, stdout: InlineStdout) -> None:
    """Serve with stdin read on the event loop (:class:`~graymatter.faces.mcp_server.stdin_lines.StdinLines`),
    claimed as the SDK claims it (fd 0 points at the null device while serving)."""
    from mcp.server import stdio as sdk_stdio

    from graymatter.faces.mcp_server.stdin_lines import StdinLines

    buffer, release = sdk_stdio._claim_fd(0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion)
    widen_pipe(buffer.fileno())
    try:
        await _serve_streams(lowlevel, StdinLines(buffer.fileno()), stdout)
    finally:
        if release is not None:
            release()


async def _serve_sdk_reader(lowlevel: Any, stdout: InlineStdout) -> None:
    """Serve with the SDK's own stdin reader, for a stdin the loop cannot wait on (a file, /dev/null)."""
    from mcp.server.stdio import stdio_server

    wire: Any = stdout  # duck-typed: the transport only awaits write() and flush()
    async with stdio_server(stdout=wire) as (read_stream, sdk_write_stream):
        await sdk_write_stream.aclose()  # answers go to ``stdout`` directly: the SDK's writer task ends
        await _serve_streams(lowlevel, read_stream, stdout)


class AnsweringReadStream(PullStream):
    """The transport's read stream as the SDK's loop consumes it, answering unreadable lines on the way.

    A pull filter: each ``receive`` takes the transport's next item; an exception (a line that is no
    JSON-RPC message) is answered on the write stream with :func:`rejection` and skipped. No task or stream
    of its own, so a request reaches the SDK's loop with no extra hand-off. ``last_context`` is the
    transport's per-message sender context, which the SDK's loop reads off the stream it is given.
    """

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        """The sender context of the item last received (the SDK's context streams carry one)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message; unreadable lines are answered and skipped."""
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(message=rejection(item)))

    async def aclose(self) -> None:
        """Close the transport's read stream."""
        await self._inner.aclose()


async def _serve_streams(lowlevel: Any, read_stream: Any, write_stream: Any) -> None:
    reader = AnsweringReadStream(read_stream, write_stream)
    await lowlevel.run(reader, write_stream, lowlevel.create_initialization_options())


def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes (its tools run inline)."""
    import anyio

    from graymatter.faces.mcp_server.server import run_tools_inline

    run_tools_inline(server)
    tune_collector()
    anyio.run(_serve, server)


COLLECTOR_THRESHOLDS = (50_000, 50, 100)
"""``gc`` thresholds while serving: a 1 MB state is ~50k container objects per call; at the default (700, 10,
10) a call ran ~10 young and, every other call, a full collection over the SDK's ~90k live objects (about
30 ms each, more than all of the call's serialisation)."""


def tune_collector() -> None:
    """Move what is alive after start-up out of the collector's reach and collect less often while serving.

    ``gc.freeze`` puts the imported SDK, the engine and the store's objects in the permanent generation (they
    live for the whole process), so no collection walks them again; the higher thresholds keep a large result
    from triggering collections in the middle of its own serialisation. Reference counting still frees
    everything that is not in a cycle at once; cycles are still collected, only later.
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
