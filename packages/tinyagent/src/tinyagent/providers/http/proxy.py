"""The proxy the environment asks for (`HTTP(S)_PROXY`, `ALL_PROXY`, `NO_PROXY`) and its connection."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, unquote, urlsplit

from tinyagent.providers.http.coalescing import CoalescingHTTPConnection, CoalescingHTTPSConnection
from tinyagent.providers.http.errors import TransportError

if TYPE_CHECKING:
    import ssl

__all__ = ["AbsoluteFormConnection", "env_proxy", "proxied_connection"]


class AbsoluteFormConnection(CoalescingHTTPConnection):
    """A plain connection to an http:// proxy: requests carry the absolute URL as their target."""

    proxy_headers: dict[str, str]


def env_proxy(parts: SplitResult, environ: Mapping[str, str]) -> str | None:
    """The proxy URL the environment asks for `parts` (as curl/httpx read it), or None."""
    found: dict[str, str] = {}
    for key, value in environ.items():
        lowered = key.lower()
        if lowered.endswith("_proxy") and value and (lowered not in found or key == lowered):
            found[lowered] = value
    proxy = found.get(f"{parts.scheme}_proxy") or found.get("all_proxy")
    if not proxy:
        return None
    host = (parts.hostname or "").lower()
    for entry in found.get("no_proxy", "").split(","):
        entry = entry.strip().lower()
        if entry == "*":
            return None
        entry = entry.lstrip(".").split(":")[0] if not entry.startswith("[") else entry
        if entry and (host == entry or host.endswith("." + entry)):
            return None
    return proxy if "://" in proxy else "http://" + proxy


def proxied_connection(
    scheme: str,
    host: str,
    port: int,
    proxy: str,
    *,
    timeout: float,
    tls_context: Callable[[], ssl.SSLContext],
) -> CoalescingHTTPConnection:
    """An unconnected connection to `host:port` through the http:// `proxy` (https via CONNECT)."""
    pp = urlsplit(proxy)
    if pp.scheme.lower() != "http" or not pp.hostname:
        raise TransportError("connection failed", f"unsupported proxy scheme {pp.scheme or '?'}://")
    auth: dict[str, str] = {}
    if pp.username is not None:
        token = f"{unquote(pp.username)}:{unquote(pp.password or '')}".encode()
        auth["Proxy-Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
    if scheme == "https":
        conn: CoalescingHTTPConnection = CoalescingHTTPSConnection(
            pp.hostname, pp.port or 80, timeout=timeout, context=tls_context()
        )
        conn.set_tunnel(host, port, headers=auth)
    else:
        absolute = AbsoluteFormConnection(pp.hostname, pp.port or 80, timeout=timeout)
        absolute.proxy_headers = auth
        conn = absolute
    return conn
