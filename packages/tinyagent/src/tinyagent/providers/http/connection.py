"""An HttpClient's one keep-alive connection: reused per origin, replaced when stale, kept or dropped."""

from __future__ import annotations

import http.client
import select
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import SplitResult

from tinyagent.providers.http.coalescing import CoalescingHTTPConnection, CoalescingHTTPSConnection
from tinyagent.providers.http.errors import TransportError, transport_error
from tinyagent.providers.http.proxy import env_proxy, proxied_connection

if TYPE_CHECKING:
    import ssl

__all__ = ["KeepAlive"]


class KeepAlive:
    """The connection of one client; `connect` reuses it for the same origin while it is not stale."""

    def __init__(
        self, *, timeout: float, environ: Mapping[str, str], tls_context: Callable[[], ssl.SSLContext]
    ) -> None:
        """`timeout` bounds connecting (at most 30 s) and every read; `environ` holds the proxy
        variables; `tls_context` is called only for an https connection."""
        self.timeout = timeout
        self.connect_timeout = min(timeout, 30.0)
        self.environ = environ
        self.tls_context = tls_context
        self.conn: CoalescingHTTPConnection | None = None
        self._origin: tuple[str, str, int] | None = None

    def discard(self) -> None:
        """Close the connection; the next request opens a new one."""
        conn, self.conn, self._origin = self.conn, None, None
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass

    def connect(self, parts: SplitResult) -> CoalescingHTTPConnection:
        """The keep-alive connection for this origin; a new one when there is none or it went stale."""
        scheme = parts.scheme.lower()
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError as exc:
            raise TransportError("connection failed", "invalid port") from exc
        origin = (scheme, (parts.hostname or ""), port)
        conn = self.conn
        # An idle keep-alive socket has nothing to read unless the server closed it.
        if conn is not None and self._origin == origin and conn.sock is not None and not _readable(conn.sock):
            conn.sock.settimeout(self.timeout)
            return conn
        self.discard()
        conn = self._new(scheme, origin[1], port, env_proxy(parts, self.environ))
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise transport_error(exc, connecting=True) from exc
        assert conn.sock is not None
        conn.sock.settimeout(self.timeout)
        self.conn, self._origin = conn, origin
        return conn

    def _new(self, scheme: str, host: str, port: int, proxy: str | None) -> CoalescingHTTPConnection:
        if proxy is not None:
            return proxied_connection(
                scheme, host, port, proxy, timeout=self.connect_timeout, tls_context=self.tls_context
            )
        if scheme == "https":
            return CoalescingHTTPSConnection(
                host, port, timeout=self.connect_timeout, context=self.tls_context()
            )
        return CoalescingHTTPConnection(host, port, timeout=self.connect_timeout)

    def read(self, response: http.client.HTTPResponse, amount: int) -> bytes:
        """Up to `amount` bytes of the body; a failure drops the connection (TransportError)."""
        try:
            return response.read1(amount)
        except (OSError, http.client.HTTPException) as exc:
            self.discard()
            raise transport_error(exc, connecting=False) from exc

    def finished(self, response: http.client.HTTPResponse, complete: bool) -> None:
        """Keep the connection for the next request only if this response was read to its end."""
        if complete and not response.will_close:
            response.close()  # releases the body; the socket stays open for the next request
        else:
            self.discard()


def _readable(sock: socket.socket) -> bool:
    """True if `sock` has data or EOF pending (for an idle keep-alive socket: the server closed it)."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
