"""Count PostgreSQL round trips from outside the client: a Unix-socket relay between psycopg and the server.

The relay reads the frontend/backend protocol the client sends and counts the messages after which the
client waits for the server's ReadyForQuery: ``Sync`` (the end of an extended-protocol request, or of a
whole pipeline) and ``Query`` (a simple-protocol statement). Statements sent together in one pipeline
count once; a statement per call counts once per call; a statement psycopg prepares outside a pipeline
counts twice (the Parse waits on its own Sync). The relay knows nothing of graymatter, so it measures
what the store really does on the wire.

Usage::

    with RoundTripRelay(dsn) as relay:
        store = PostgresStore(relay.dsn, min_size=1, max_size=1)
        relay.reset()
        ...  # the work to count
        assert relay.count() <= 3
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import tempfile
import threading
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit


def _socket_path(dsn: str) -> tuple[str, str]:
    """The server's Unix socket path of a ``postgresql://...?host=/dir`` URL, and its port."""
    parts = urlsplit(dsn)
    host = parse_qs(parts.query)["host"][0]
    port = str(parts.port or 5432)
    return os.path.join(host, f".s.PGSQL.{port}"), port


class _ClientStream:
    """The client's side of one connection, split into protocol messages (the first one untyped)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._started = False

    def feed(self, data: bytes) -> int:
        """Take bytes the client sent; return how many ``Sync``/``Query`` messages they completed."""
        self._buffer += data
        waits = 0
        while True:
            head = 0 if not self._started else 1
            if len(self._buffer) < head + 4:
                return waits
            size = struct.unpack(">i", self._buffer[head : head + 4])[0]
            if len(self._buffer) < head + size:
                return waits
            kind = self._buffer[:1] if self._started else b""
            self._buffer = self._buffer[head + size :]
            self._started = True
            waits += kind in (b"S", b"Q")


class RoundTripRelay:
    """A relay that forwards every byte both ways and counts client turns (round trips)."""

    def __init__(self, dsn: str) -> None:
        self._target, port = _socket_path(dsn)
        self._dir = tempfile.mkdtemp(prefix="gm-rt-")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(os.path.join(self._dir, f".s.PGSQL.{port}"))
        self._listener.listen(64)
        parts = urlsplit(dsn)
        query = f"host={quote(self._dir, safe='/')}"
        self.dsn = urlunsplit(parts._replace(query=query))
        self._lock = threading.Lock()
        self._turns = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="pg-roundtrip-relay", daemon=True)
        self._thread.start()

    def reset(self) -> None:
        """Start counting from zero."""
        with self._lock:
            self._turns = 0

    def count(self) -> int:
        """Round trips since the last :meth:`reset`."""
        with self._lock:
            return self._turns

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, None)
        # per client socket: (peer socket, is_client, state) where state[0] = the client is waiting
        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.1):
                if key.data is None:
                    client, _ = self._listener.accept()
                    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    server.connect(self._target)
                    state = _ClientStream()
                    selector.register(client, selectors.EVENT_READ, (server, True, state))
                    selector.register(server, selectors.EVENT_READ, (client, False, state))
                    continue
                self._relay(selector, key.fileobj, *key.data)  # type: ignore[arg-type]
        selector.close()

    def _relay(
        self, selector: selectors.BaseSelector, source: socket.socket, peer: socket.socket, from_client: bool,
        state: _ClientStream,
    ) -> None:  # fmt: skip
        try:
            data = source.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            for sock in (source, peer):
                with contextlib.suppress(KeyError, ValueError):
                    selector.unregister(sock)
                sock.close()
            return
        if from_client:
            waits = state.feed(data)
            if waits:
                with self._lock:
                    self._turns += waits
        peer.sendall(data)

    def close(self) -> None:
        """Stop relaying and remove the socket directory."""
        self._stop.set()
        self._thread.join(5)
        self._listener.close()
        for name in os.listdir(self._dir):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._dir, name))
        with contextlib.suppress(OSError):
            Path(self._dir).rmdir()

    def __enter__(self) -> RoundTripRelay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
