"""The REST face: dispatches a request to its :data:`ROUTES` entry over a memory and answers in JSON."""

from __future__ import annotations

import json
from typing import Any

from graymatter.engine.memory_api import MemoryAPI
from graymatter.errors import InvalidInput
from graymatter.faces.http.asgi import (
    Receive,
    Response,
    Scope,
    Send,
    error_response,
    json_response,
    query_params,
    read_body,
    send_response,
)
from graymatter.faces.http.errors import error_for
from graymatter.faces.http.observability import Metrics
from graymatter.faces.http.routes import ROUTES, Route
from graymatter.validation import MAX_JSON_DEPTH, nesting

MCP_PATH = "/mcp"
"""Where the service mounts MCP (streamable HTTP)."""
SERVICE_PATHS = ("/healthz", "/metrics", "/openapi.json")
"""Served beside the REST routes (health and OpenAPI before auth, metrics behind it)."""


def route_name(method: str, path: str) -> str:
    """The metrics/log label of a request: its route template, a service path, ``/mcp`` or ``other``."""
    for route in ROUTES:
        if route.match(method, path) is not None:
            return route.path
    if path in SERVICE_PATHS:
        return path
    if is_mcp_path(path):
        return MCP_PATH
    return "other"


def is_mcp_path(path: str) -> bool:
    """True for ``/mcp`` and below."""
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


class RestApp:
    """The REST routes and ``/metrics`` over a (scoped) memory. Plain ASGI; engine calls run in threads."""

    def __init__(self, memory: MemoryAPI, metrics: Metrics) -> None:
        self.memory = memory
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        if path == "/metrics" and method == "GET":
            body = self.metrics.render().encode()
            await send_response(
                send, (200, body, {"content-type": "text/plain; version=0.0.4; charset=utf-8"})
            )
            return
        for route in ROUTES:
            path_args = route.match(method, path)
            if path_args is not None:
                await send_response(send, await self._dispatch(route, path_args, scope, receive))
                return
        allowed = sorted({m for r in ROUTES for m in ("GET", "POST") if r.match(m, path) is not None})
        if path == "/metrics":
            allowed = ["GET"]
        if allowed:
            refusal = error_response(
                405, "method_not_allowed", f"{method} is not allowed on {path}", {"allow": ", ".join(allowed)}
            )
            await send_response(send, refusal)
            return
        await send_response(send, error_response(404, "not_found", f"no route {path}"))

    async def _dispatch(
        self, route: Route, path_args: dict[str, str], scope: Scope, receive: Receive
    ) -> Response:
        from starlette.concurrency import run_in_threadpool

        if route.body_model is not None and not _json_body(scope):
            return error_response(415, "unsupported_media_type", "the request body must be application/json")
        try:
            argument = await _argument(route, path_args, scope, receive)
            result = await run_in_threadpool(route.handler, self.memory, argument)
            return json_response(route.status, result.model_dump(mode="json"))
        except Exception as exc:
            return error_for(exc, f"{route.method} {route.path}")


def _json_body(scope: Scope) -> bool:
    """Whether the declared body type is JSON (``application/json``, ``*/*+json``) or not declared."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-type":
            media: str = value.decode("latin-1").split(";", 1)[0].strip().lower()
            suffixed = media.startswith("application/") and media.endswith("+json")
            return media == "application/json" or suffixed
    return True


async def _argument(route: Route, path_args: dict[str, str], scope: Scope, receive: Receive) -> Any:
    """The validated handler argument: the body, the query, or ``(query, path)``."""
    argument: Any = None
    if route.body_model is not None:
        raw = await read_body(receive)
        try:
            payload = json.loads(raw) if raw else None
        except RecursionError:
            raise InvalidInput(f"request body nests more than {MAX_JSON_DEPTH} levels deep") from None
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("request body must be a JSON object") from None
        nesting(payload, "request body")
        if not isinstance(payload, dict):
            raise InvalidInput("request body must be a JSON object")
        argument = route.body_model.model_validate(payload)
    if route.query_model is not None:
        argument = route.query_model.model_validate(query_params(scope))
    if route.path_model is not None:
        argument = (argument, route.path_model.model_validate(path_args))
    return argument
