"""Running the HTTP service: bind the socket, run uvicorn (one process or N workers), build a worker's app.

uvicorn and the engine load when a function here runs, so importing this module stays cheap.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, TypedDict

from graymatter.errors import InvalidInput
from graymatter.faces.http.asgi import ASGIApp

SERVE_CONFIG_ENV = "GRAYMATTER_SERVE_CONFIG"
"""How the parent hands ``graymatter serve`` settings to its worker processes (JSON)."""
WORKER_FACTORY = "graymatter.faces.http.serve:worker_app"
"""The uvicorn factory of a worker process (``--workers N``)."""


class ServeSettings(TypedDict):
    """What ``graymatter serve`` resolved from its flags; JSON-safe, so workers can receive it."""

    store: str
    host: str
    port: int
    token: str | None
    no_auth: bool
    rate_limit: float
    rate_burst: int
    extra_hosts: list[str]
    max_body_bytes: int
    read_timeout_s: float
    max_connections: int
    pool: tuple[int, int, float]
    """PostgreSQL pool: min connections, max connections, seconds a call waits for one."""


def shown_host(host: str) -> str:
    """``host`` as it appears in a URL (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host else host


def bind_socket(host: str, port: int, address: str) -> socket.socket:
    """A listening TCP socket on ``host:port``; ``address`` names it in the error when binding fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on {address}: {exc.strerror or exc}") from None
    return sock


def _limits(settings: ServeSettings | None) -> dict[str, Any]:
    """Apply the connection limits in this process (defaults without settings); the uvicorn options
    that enforce them."""
    from graymatter.faces.http.protocol import LIMITS, configure

    if settings is None:
        return configure(LIMITS.read_timeout_s, LIMITS.max_connections)
    return configure(settings["read_timeout_s"], settings["max_connections"])


def run_server(
    app: ASGIApp, sock: socket.socket, settings: ServeSettings | None = None, **options: Any
) -> None:
    """Serve ``app`` on ``sock`` with uvicorn until interrupted (``options`` go to ``uvicorn.Config``),
    with the read timeout and connection cap of ``settings`` (the defaults without)."""
    import uvicorn

    uvicorn.Server(uvicorn.Config(app, **_limits(settings), **options)).run(sockets=[sock])


def run_workers(settings: ServeSettings, workers: int, **options: Any) -> None:
    """Serve with ``workers`` uvicorn processes, each building its app with :func:`worker_app`."""
    import uvicorn

    os.environ[SERVE_CONFIG_ENV] = json.dumps(settings)
    uvicorn.run(
        WORKER_FACTORY,
        factory=True,
        host=settings["host"],
        port=settings["port"],
        workers=workers,
        **_limits(settings),
        **options,
    )


def build_service(settings: ServeSettings, port: int | None = None) -> ASGIApp:
    """Open the store and build the ``graymatter serve`` app (scoped tokens) for one server process."""
    from graymatter.engine.access import TokenService
    from graymatter.engine.memory import Memory
    from graymatter.faces.http.app import ServiceConfig, build_app
    from graymatter.store import PoolBounds, open_store

    memory = Memory(store=open_store(settings["store"], pool=PoolBounds(*settings["pool"])))
    try:
        tokens = TokenService(memory.store.token_store(), default_token=settings["token"])
        config = ServiceConfig(
            host=settings["host"],
            port=settings["port"] if port is None else port,
            default_token=settings["token"],
            no_auth=settings["no_auth"],
            rate_limit=settings["rate_limit"],
            rate_burst=settings["rate_burst"],
            extra_hosts=tuple(settings["extra_hosts"]),
            max_body_bytes=settings["max_body_bytes"],
        )
        return build_app(memory, tokens, config, close_memory=True)
    except BaseException:
        memory.close()
        raise


def worker_app() -> ASGIApp:
    """uvicorn factory for ``--workers N``: settings come from the parent through the environment."""
    from graymatter.faces.http.observability import configure_logging

    configure_logging()
    settings: ServeSettings = json.loads(os.environ[SERVE_CONFIG_ENV])
    _limits(settings)
    return build_service(settings)
