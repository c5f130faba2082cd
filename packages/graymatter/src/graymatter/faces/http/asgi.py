"""ASGI plumbing of the HTTP face: message types, JSON responses, body and query reading, lifespan."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import parse_qsl

from graymatter.errors import InvalidInput

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Response = tuple[int, bytes, dict[str, str]]
"""Status, body and headers of one complete response."""


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    """A compact JSON response."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return status, body, {"content-type": "application/json", **(headers or {})}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    """The JSON error envelope ``{"error": {"code": ..., "message": ...}}``."""
    return json_response(status, {"error": {"code": code, "message": message}}, headers)


async def send_response(send: Send, response: Response) -> None:
    """Send one complete response with its Content-Length."""
    status, body, headers = response
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def query_params(scope: Scope) -> dict[str, str]:
    """The query string as a dict; a repeated key keeps its first value."""
    raw = scope.get("query_string", b"").decode("latin-1")
    try:
        pairs = parse_qsl(
            raw, keep_blank_values=True, strict_parsing=False, encoding="utf-8", errors="strict"
        )
    except UnicodeDecodeError:
        raise InvalidInput("query string is not valid UTF-8") from None
    out: dict[str, str] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


async def read_body(receive: Receive) -> bytes:
    """The whole request body (the security layer has already capped its size)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def run_lifespan(
    lifespan: Callable[[], AbstractAsyncContextManager[None]], receive: Receive, send: Send
) -> None:
    """Minimal ASGI lifespan protocol around an async context manager."""
    message = await receive()
    if message["type"] != "lifespan.startup":
        return
    manager = lifespan()
    try:
        await manager.__aenter__()
    except Exception as exc:
        await send({"type": "lifespan.startup.failed", "message": str(exc)})
        return
    await send({"type": "lifespan.startup.complete"})
    message = await receive()
    try:
        await manager.__aexit__(None, None, None)
    except Exception as exc:
        await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
        return
    await send({"type": "lifespan.shutdown.complete"})
