"""The one HTTP application factory: REST and/or MCP behind the security layer, metrics and access log.

Layers, outermost first:

1. access log + Prometheus metrics (one JSON log line per request; never bodies or tokens);
2. ``GET /healthz`` (no auth; readiness: round-trips the store) and ``GET /openapi.json`` (no auth);
3. :class:`graymatter.faces.http.security.SecurityMiddleware` (Host/Origin, bearer token, body cap), whose
   one authentication path turns the token into a typed :class:`graymatter.engine.access.Principal`;
4. the principal bound once for the request (:func:`graymatter.engine.access.bind_principal`) and a
   per-caller rate limit (429);
5. the REST routes and ``/mcp``, both over a :class:`graymatter.engine.scoped.ScopedMemory`, so a token's
   namespace scope is enforced identically over REST and MCP.

``graymatter serve`` builds it with scoped tokens (:class:`graymatter.engine.access.TokenService`);
``graymatter mcp serve --http`` builds the MCP-only variant (``rest=False``) with one static token.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graymatter import __version__
from graymatter.engine.access import PrincipalSource, bind_principal
from graymatter.engine.scoped import ScopedMemory
from graymatter.faces.http.asgi import error_response, json_response, run_lifespan, send_response
from graymatter.faces.http.auth import principal_authenticator, principal_of
from graymatter.faces.http.observability import Metrics, access_log
from graymatter.faces.http.openapi import openapi_document
from graymatter.faces.http.ratelimit import RateLimiter
from graymatter.faces.http.rest import MCP_PATH, RestApp, is_mcp_path, route_name
from graymatter.faces.http.security import HttpSecurityPolicy, SecurityMiddleware, build_policy

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory
    from graymatter.faces.dashboard.sessions import SessionStore
    from graymatter.faces.http.asgi import ASGIApp, Message, Receive, Response, Scope, Send
    from graymatter.faces.mcp_server.server import McpHttpApp

log = logging.getLogger("graymatter.rest")


@dataclass
class ServiceConfig:
    """How one HTTP service process is set up."""

    host: str = "127.0.0.1"
    port: int = 8080
    default_token: str | None = None
    no_auth: bool = False
    rate_limit: float = 200.0
    rate_burst: int = 400
    max_body_bytes: int = 1024 * 1024
    extra_hosts: tuple[str, ...] = ()
    mcp: bool = True
    mcp_stateless: bool = True
    """Stateless MCP suits several servers behind a load balancer; ``mcp serve --http`` keeps sessions."""
    rest: bool = True
    """The REST routes, ``/healthz``, ``/openapi.json`` and ``/metrics``; False serves MCP alone."""
    metrics: Metrics = field(default_factory=Metrics)
    dashboard: bool = True
    """The web dashboard at ``/`` and ``/ui/`` (with REST only; its own session login, decision 0014)."""
    dashboard_sessions: SessionStore | None = None
    """Where dashboard sessions live; ``graymatter ui`` passes one to issue its one-time login link."""


class _Guarded:
    """Behind the security layer: binds the request's principal once, rate-limits it, routes it."""

    def __init__(self, rest: RestApp | None, mcp: McpHttpApp | None, config: ServiceConfig) -> None:
        self.rest = rest
        self.mcp = mcp
        self.metrics = config.metrics
        self.limiter = RateLimiter(config.rate_limit, config.rate_burst)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = principal_of(scope)
        token_id = principal.token_id if principal is not None else None
        key = token_id or (scope.get("client") or ("local",))[0]
        wait = self.limiter.take(key)
        if wait > 0:
            self.metrics.rate_limited += 1
            retry = {"retry-after": str(max(1, math.ceil(wait)))}
            await send_response(
                send, error_response(429, "rate_limited", "too many requests; slow down", retry)
            )
            return
        with bind_principal(principal):
            if self.mcp is not None and (self.rest is None or is_mcp_path(scope["path"])):
                await self.mcp.app(scope, receive, send)
            elif self.rest is not None:
                await self.rest(scope, receive, send)


@dataclass(eq=False)
class _Service:
    """The outermost layer: lifespan, the unauthenticated service paths, metrics and the access log."""

    memory: Memory
    secured: ASGIApp
    config: ServiceConfig
    mcp: McpHttpApp | None
    close_memory: bool
    dashboard: ASGIApp | None = None
    openapi_body: bytes = field(init=False)

    def __post_init__(self) -> None:
        self.openapi_body = json.dumps(openapi_document()).encode() if self.config.rest else b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await run_lifespan(self.lifespan, receive, send)
            return
        if scope["type"] != "http":
            await self.secured(scope, receive, send)
            return
        started = time.perf_counter()
        status_box = [500]

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
            await send(message)

        metrics = self.config.metrics
        metrics.in_flight += 1
        try:
            await self._serve(scope, receive, observed_send)
        finally:
            metrics.in_flight -= 1
            elapsed = time.perf_counter() - started
            route = route_name(scope["method"], scope["path"])
            metrics.observe(route, scope["method"], status_box[0], elapsed)
            access_log(scope, route, status_box[0], elapsed, principal_of(scope))

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if self.dashboard is not None and _is_dashboard_path(path):
            await self.dashboard(scope, receive, send)
        elif not self.config.rest or path not in ("/healthz", "/openapi.json"):
            await self.secured(scope, receive, send)
        elif method != "GET":
            allow = {"allow": "GET"}
            await send_response(
                send, error_response(405, "method_not_allowed", f"{method} is not allowed on {path}", allow)
            )
        elif path == "/healthz":
            await send_response(send, await self.health())
        else:
            await send_response(send, (200, self.openapi_body, {"content-type": "application/json"}))

    async def health(self) -> Response:
        """Readiness: round-trip the store."""
        from starlette.concurrency import run_in_threadpool

        store = self.memory.store
        kind = store.kind
        try:
            await run_in_threadpool(store.ping)
        except Exception as exc:
            log.warning(
                "health check failed: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            )
            return json_response(503, {"status": "unavailable", "store": kind, "version": __version__})
        return json_response(200, {"status": "ok", "store": kind, "version": __version__})

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Runs the MCP session manager; closes the memory at shutdown when the app owns it."""
        try:
            if self.mcp is not None:
                async with self.mcp.lifespan():
                    yield
            else:
                yield
        finally:
            if self.close_memory:
                from starlette.concurrency import run_in_threadpool

                await run_in_threadpool(self.memory.close)


def build_app(
    memory: Memory, tokens: PrincipalSource | None, config: ServiceConfig, *, close_memory: bool = False
) -> ASGIApp:
    """The whole service as one ASGI app: REST + MCP + health + metrics + OpenAPI (``config`` picks)."""
    if not (config.rest or config.mcp):
        raise ValueError("the HTTP service needs REST or MCP")
    scoped = ScopedMemory(memory)
    mcp = None
    if config.mcp:
        from graymatter.faces.mcp_server.server import mcp_http_app

        mcp = mcp_http_app(scoped, path=MCP_PATH, stateless=config.mcp_stateless)
    rest = RestApp(scoped, config.metrics) if config.rest else None
    policy = build_policy(
        config.host,
        config.port,
        token=None,
        no_auth=config.no_auth,
        authenticate=None if config.no_auth else principal_authenticator(tokens),
        extra_hosts=config.extra_hosts,
        max_body_bytes=config.max_body_bytes,
    )
    secured = SecurityMiddleware(_Guarded(rest, mcp, config), policy)
    dashboard = _dashboard(scoped, tokens, policy, config) if config.rest and config.dashboard else None
    return _Service(memory, secured, config, mcp, close_memory, dashboard)


def _is_dashboard_path(path: str) -> bool:
    from graymatter.faces.dashboard.app import is_dashboard_path

    return is_dashboard_path(path)


def _dashboard(
    scoped: ScopedMemory, tokens: PrincipalSource | None, policy: HttpSecurityPolicy, config: ServiceConfig
) -> ASGIApp:
    """The dashboard app, authenticating exactly as the security layer does (decision record 0014)."""
    import inspect

    from graymatter.engine.access import TokenService
    from graymatter.faces.dashboard.app import DashboardApp
    from graymatter.faces.dashboard.context import DashboardSettings
    from graymatter.faces.dashboard.sessions import SessionStore

    gate = policy.authenticate

    async def authenticate(presented: str) -> object:
        assert gate is not None
        outcome = gate(presented)
        return await outcome if inspect.isawaitable(outcome) else outcome

    settings = DashboardSettings(
        authenticate=None if gate is None else authenticate,
        allowed_hosts=policy.allowed_hosts,
        allowed_origins=policy.allowed_origins,
        tokens=tokens if isinstance(tokens, TokenService) else None,
        metrics_text=config.metrics.render,
        sessions=config.dashboard_sessions or SessionStore(),
        throttle=RateLimiter(config.rate_limit, config.rate_burst).take,
    )
    return DashboardApp(scoped, settings)


__all__ = ["ServiceConfig", "build_app"]
