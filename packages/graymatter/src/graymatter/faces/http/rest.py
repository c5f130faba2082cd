"""One HTTP service: the REST API and MCP (streamable HTTP, stateless) on one port, as an ASGI app.

Layers, outermost first:

1. access log + Prometheus metrics (one JSON log line per request; never bodies or tokens);
2. ``GET /healthz`` (no auth; readiness: round-trips the store) and ``GET /openapi.json`` (no auth);
3. :class:`graymatter.faces.http.security.SecurityMiddleware` (Host/Origin, bearer token, 1 MiB body cap);
4. principal binding (scoped tokens, :mod:`graymatter.engine.access`) and a per-token rate limit (429);
5. the REST routes and ``/mcp``, both over a :class:`graymatter.engine.access.ScopedMemory`, so a token's
   namespace scope is enforced identically over REST and MCP.

Every request and response body is a pydantic model from this module or :mod:`graymatter.models`; the
OpenAPI document is generated from the same models and the same route table that dispatches requests.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import math
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graymatter import __version__
from graymatter.engine.access import Principal, ScopedMemory, TokenService, bind_principal, current_principal
from graymatter.errors import (
    CorruptRecord,
    GraymatterError,
    InvalidInput,
    NotFound,
    StorageError,
)
from graymatter.models import (
    Checkpoint,
    Confidence,
    Fact,
    RecallExplanation,
    RecallHit,
    RecallScope,
    Revision,
)
from graymatter.validation import first_error

log = logging.getLogger("graymatter.rest")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

# --------------------------------------------------------------------------------------------- wire models


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentQuery(_In):
    agent_id: str = Field(
        min_length=1, description="Agent namespace (used unchanged; __shared__ = project-wide)."
    )


class RememberRequest(AgentQuery):
    text: str = Field(min_length=1, description="The fact to store.")
    confidence: Confidence = "inferred"


class RecallQuery(AgentQuery):
    q: str = Field(default="", description="Natural-language query; empty = most recent facts.")
    k: int = Field(default=8, ge=1, le=100, description="Number of results (top-k).")
    scope: RecallScope = Field(default="agent", description="agent, shared (__shared__) or all (both fused).")
    explain: bool = Field(default=False, description="Include per-signal ranks and the score derivation.")


class FactsQuery(AgentQuery):
    limit: int = Field(default=50, ge=1, le=1000, description="At most this many facts, newest first.")
    include_superseded: bool = Field(
        default=True, description="Include tombstoned (revised/forgotten) facts."
    )


class ReviseRequest(AgentQuery):
    old_text: str = Field(min_length=1, description="Exact text of the live fact(s) to replace.")
    new_text: str = Field(min_length=1, description="The replacement fact.")
    confidence: Confidence | None = None


class ForgetRequest(AgentQuery):
    text: str = Field(
        min_length=1, description="Exact text of the live fact(s) to tombstone (never deleted)."
    )


class CheckpointRequest(AgentQuery):
    state: dict[str, Any] = Field(default_factory=dict, description="The session state (a JSON object).")
    messages: list[Any] | None = Field(default=None, description="Optional message history.")
    metadata: dict[str, Any] = Field(default_factory=dict)


class CheckpointListQuery(AgentQuery):
    limit: int = Field(default=20, ge=1, le=1000)


class CheckpointPath(_In):
    checkpoint_id: str = Field(min_length=1, max_length=64)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Health(_Out):
    status: Literal["ok", "unavailable"]
    store: str
    version: str


class ErrorDetail(_Out):
    code: str
    message: str


class ErrorResponse(_Out):
    error: ErrorDetail


class RecallResponse(_Out):
    results: list[RecallHit]
    explanations: list[RecallExplanation] | None = None


class FactsResponse(_Out):
    facts: list[Fact]


class ForgetResponse(_Out):
    superseded_ids: list[str]


class CheckpointList(_Out):
    checkpoints: list[Checkpoint]


# --------------------------------------------------------------------------------------------- routes


@dataclass(frozen=True)
class Route:
    """One REST operation: the single source of dispatch and of its OpenAPI entry."""

    method: str
    path: str
    operation_id: str
    summary: str
    handler: Callable[[Any, Any], Any]
    response_model: type[BaseModel]
    query_model: type[BaseModel] | None = None
    body_model: type[BaseModel] | None = None
    path_model: type[BaseModel] | None = None
    status: int = 200
    errors: tuple[int, ...] = (401, 403, 422, 429, 503)

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method != self.method:
            return None
        want = self.path.strip("/").split("/")
        got = path.strip("/").split("/")
        if len(want) != len(got):
            return None
        found: dict[str, str] = {}
        for w, g in zip(want, got, strict=True):
            if w.startswith("{"):
                if not g:
                    return None
                found[w[1:-1]] = g
            elif w != g:
                return None
        return found


def _remember(memory: Any, body: RememberRequest) -> Fact:
    return memory.remember(
        body.agent_id, body.text, confidence=body.confidence, provenance=_rest_provenance()
    )


def _recall(memory: Any, query: RecallQuery) -> RecallResponse:
    if query.explain:
        explained = memory.recall_explain(query.agent_id, query.q, query.k, scope=query.scope)
        hits = [
            RecallHit.model_validate(e.model_dump(include=set(RecallHit.model_fields))) for e in explained
        ]
        return RecallResponse(results=hits, explanations=explained)
    return RecallResponse(results=memory.recall(query.agent_id, query.q, query.k, scope=query.scope))


def _facts(memory: Any, query: FactsQuery) -> FactsResponse:
    raw = memory.memory if isinstance(memory, ScopedMemory) else memory
    latest = getattr(raw.store, "latest_facts", None)
    if latest is None:  # the embedded store lists everything; newest first, cut here
        facts = memory.list(query.agent_id, include_superseded=query.include_superseded)
        return FactsResponse(facts=list(reversed(facts))[: query.limit])
    from graymatter.engine.access import require
    from graymatter.validation import agent_id as valid_agent_id

    agent = valid_agent_id(query.agent_id, raw.config.max_agent_id_chars)
    require(agent, write=False)
    return FactsResponse(facts=latest(agent, query.limit, include_superseded=query.include_superseded))


def _revise(memory: Any, body: ReviseRequest) -> Revision:
    return memory.revise(
        body.agent_id, body.old_text, body.new_text, confidence=body.confidence, provenance=_rest_provenance()
    )


def _forget(memory: Any, body: ForgetRequest) -> ForgetResponse:
    return ForgetResponse(superseded_ids=memory.forget(body.agent_id, body.text))


def _checkpoint_save(memory: Any, body: CheckpointRequest) -> Checkpoint:
    return memory.checkpoint_save(
        body.agent_id,
        body.state,
        messages=body.messages,
        metadata=body.metadata,
        provenance=_rest_provenance(),
    )


def _checkpoint_latest(memory: Any, query: AgentQuery) -> Checkpoint:
    return memory.checkpoint_latest(query.agent_id)


def _checkpoint_list(memory: Any, query: CheckpointListQuery) -> CheckpointList:
    return CheckpointList(checkpoints=memory.checkpoint_list(query.agent_id, query.limit))


def _checkpoint_get(memory: Any, args: tuple[AgentQuery, CheckpointPath]) -> Checkpoint:
    query, path = args
    return memory.checkpoint_get(query.agent_id, path.checkpoint_id)


def _rest_provenance() -> dict[str, Any]:
    principal = current_principal()
    return {"interface": "rest", "token_id": principal.token_id if principal else None}


ROUTES: tuple[Route, ...] = (
    Route("POST", "/remember", "remember", "Store a durable fact", _remember, Fact,
          body_model=RememberRequest, status=201),
    Route("GET", "/recall", "recall", "Recall the facts most relevant to a query", _recall, RecallResponse,
          query_model=RecallQuery),
    Route("GET", "/facts", "list_facts", "List an agent's facts, newest first", _facts, FactsResponse,
          query_model=FactsQuery),
    Route("POST", "/revise", "revise", "Replace a fact (the old one is tombstoned)", _revise, Revision,
          body_model=ReviseRequest, errors=(401, 403, 404, 422, 429, 503)),
    Route("POST", "/forget", "forget", "Tombstone a fact by exact text", _forget, ForgetResponse,
          body_model=ForgetRequest, errors=(401, 403, 404, 422, 429, 503)),
    Route("POST", "/checkpoints", "checkpoint_save", "Save a checkpoint", _checkpoint_save, Checkpoint,
          body_model=CheckpointRequest, status=201),
    Route("GET", "/checkpoints", "checkpoint_list", "List checkpoints, newest first", _checkpoint_list,
          CheckpointList, query_model=CheckpointListQuery),
    Route("GET", "/checkpoints/latest", "checkpoint_latest", "The newest checkpoint", _checkpoint_latest,
          Checkpoint, query_model=AgentQuery, errors=(401, 403, 404, 422, 429, 503)),
    Route("GET", "/checkpoints/{checkpoint_id}", "checkpoint_get", "One checkpoint by id", _checkpoint_get,
          Checkpoint, query_model=AgentQuery, path_model=CheckpointPath,
          errors=(401, 403, 404, 422, 429, 503)),
)  # fmt: skip

_ERROR_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (InvalidInput, 422),
    (NotFound, 404),
    (CorruptRecord, 500),
    (StorageError, 503),
)


def _status_for(exc: GraymatterError) -> int:
    if exc.code == "forbidden":
        return 403
    for kind, status in _ERROR_STATUS:
        if isinstance(exc, kind):
            return status
    return 422


# --------------------------------------------------------------------------------------------- OpenAPI


def openapi_document(server_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document, generated from :data:`ROUTES` and the pydantic models."""
    from pydantic.json_schema import models_json_schema

    models: set[type[BaseModel]] = {ErrorResponse, Health}
    for route in ROUTES:
        models.add(route.response_model)
        if route.body_model is not None:
            models.add(route.body_model)
    ordered = sorted(models, key=lambda m: m.__name__)
    refs, top = models_json_schema(
        [(m, "serialization" if m not in {r.body_model for r in ROUTES} else "validation") for m in ordered],
        ref_template="#/components/schemas/{model}",
    )
    components = top.get("$defs", {})

    def ref(model: type[BaseModel], mode: str) -> dict[str, Any]:
        return refs[(model, mode)]

    error_ref = {"content": {"application/json": {"schema": ref(ErrorResponse, "serialization")}}}
    descriptions = {
        401: "Missing or invalid bearer token",
        403: "Token not allowed for this agent namespace or operation (nothing changed)",
        404: "No matching fact or checkpoint",
        413: "Request body too large",
        422: "Invalid input (nothing changed)",
        429: "Rate limit exceeded; retry after the Retry-After seconds",
        503: "Store unavailable",
    }
    paths: dict[str, Any] = {}
    for route in ROUTES:
        operation: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": route.summary,
            "security": [{"bearer": []}],
            "parameters": [],
            "responses": {
                str(route.status): {
                    "description": "Success",
                    "content": {"application/json": {"schema": ref(route.response_model, "serialization")}},
                },
            },
        }
        for status in (*route.errors, *((413,) if route.body_model else ())):
            operation["responses"][str(status)] = {"description": descriptions[status], **error_ref}
        for location, model in (("query", route.query_model), ("path", route.path_model)):
            if model is None:
                continue
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            required = set(schema.get("required", []))
            for name, prop in schema["properties"].items():
                param_schema = {k: v for k, v in prop.items() if k not in {"title", "description"}}
                operation["parameters"].append({
                    "name": name,
                    "in": location,
                    "required": location == "path" or name in required,
                    "description": prop.get("description", ""),
                    "schema": param_schema,
                })  # fmt: skip
        if route.body_model is not None:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": ref(route.body_model, "validation")}},
            }
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "Readiness: round-trips the store (no auth)",
            "security": [],
            "responses": {
                "200": {"description": "Ready",
                        "content": {"application/json": {"schema": ref(Health, "serialization")}}},
                "503": {"description": "Store unavailable",
                        "content": {"application/json": {"schema": ref(Health, "serialization")}}},
            },
        }
    }  # fmt: skip
    paths["/metrics"] = {
        "get": {
            "operationId": "metrics",
            "summary": "Prometheus metrics (text exposition format 0.0.4)",
            "security": [{"bearer": []}],
            "responses": {
                "200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}},
                "401": {"description": descriptions[401], **error_ref},
            },
        }
    }
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "graymatter", "version": __version__,
                 "description": "Agent memory and checkpoints. MCP (streamable HTTP) is served at /mcp."},
        "paths": paths,
        "components": {"schemas": components,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }  # fmt: skip
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document


# --------------------------------------------------------------------------------------------- metrics

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """A tiny thread-safe Prometheus registry (labels come from fixed sets: routes, methods, statuses)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, str], int] = {}
        self.durations: dict[str, list[float]] = {}
        self.duration_sum: dict[str, float] = {}
        self.in_flight = 0
        self.rate_limited = 0
        self.started = time.time()

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            key = (route, method, str(status))
            self.requests[key] = self.requests.get(key, 0) + 1
            buckets = self.durations.setdefault(route, [0] * (len(_BUCKETS) + 1))
            for i, bound in enumerate(_BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            buckets[-1] += 1
            self.duration_sum[route] = self.duration_sum.get(route, 0.0) + seconds

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP graymatter_http_requests_total HTTP requests by route, method and status.",
                "# TYPE graymatter_http_requests_total counter",
            ]
            for (route, method, status), count in sorted(self.requests.items()):
                lines.append(
                    f'graymatter_http_requests_total{{route="{route}",method="{method}",status="{status}"}}'
                    f" {count}"
                )
            lines += [
                "# HELP graymatter_http_request_duration_seconds Request latency by route.",
                "# TYPE graymatter_http_request_duration_seconds histogram",
            ]
            for route, buckets in sorted(self.durations.items()):
                for bound, count in zip(_BUCKETS, buckets, strict=False):
                    lines.append(
                        f'graymatter_http_request_duration_seconds_bucket{{route="{route}",le="{bound}"}}'
                        f" {count}"
                    )
                lines.append(
                    f'graymatter_http_request_duration_seconds_bucket{{route="{route}",le="+Inf"}}'
                    f" {buckets[-1]}"
                )
                lines.append(
                    f'graymatter_http_request_duration_seconds_sum{{route="{route}"}}'
                    f" {self.duration_sum[route]:.6f}"
                )
                lines.append(
                    f'graymatter_http_request_duration_seconds_count{{route="{route}"}} {buckets[-1]}'
                )
            lines += [
                "# HELP graymatter_http_requests_in_flight Requests being served now.",
                "# TYPE graymatter_http_requests_in_flight gauge",
                f"graymatter_http_requests_in_flight {self.in_flight}",
                "# HELP graymatter_rate_limited_total Requests refused with 429.",
                "# TYPE graymatter_rate_limited_total counter",
                f"graymatter_rate_limited_total {self.rate_limited}",
                "# HELP graymatter_process_start_time_seconds Start time of this server process.",
                "# TYPE graymatter_process_start_time_seconds gauge",
                f"graymatter_process_start_time_seconds {self.started:.3f}",
            ]  # fmt: skip
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------- rate limit


class RateLimiter:
    """Token buckets per caller identity: ``rate`` requests per second, bursts up to ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed, else the seconds to wait before the next request can pass."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                if len(self._buckets) > 10_000:  # forget idle callers
                    self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60}
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate


# --------------------------------------------------------------------------------------------- app


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
    metrics: Metrics = field(default_factory=Metrics)


def _json(
    status: int, payload: Any, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return status, body, {"content-type": "application/json", **(headers or {})}


def _error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    return _json(status, {"error": {"code": code, "message": message}}, headers)


async def _send(send: Send, status: int, body: bytes, headers: dict[str, str]) -> None:
    raw = [(k.encode(), v.encode()) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _query_params(scope: Scope) -> dict[str, str]:
    from urllib.parse import parse_qsl

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


def _validation_message(exc: ValidationError) -> str:
    where, message = first_error(exc)
    return f"{where or 'body'}: {message}"


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class RestApp:
    """The REST routes over a (scoped) memory. Plain ASGI; engine calls run in worker threads."""

    def __init__(self, memory: Any, config: ServiceConfig) -> None:
        self.memory = memory
        self.config = config

    def route_name(self, method: str, path: str) -> str:
        for route in ROUTES:
            if route.match(method, path) is not None:
                return route.path
        if path in ("/healthz", "/metrics", "/openapi.json"):
            return path
        if path == "/mcp" or path.startswith("/mcp/"):
            return "/mcp"
        return "other"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        if path == "/metrics" and method == "GET":
            body = self.config.metrics.render().encode()
            await _send(send, 200, body, {"content-type": "text/plain; version=0.0.4; charset=utf-8"})
            return
        for route in ROUTES:
            path_args = route.match(method, path)
            if path_args is not None:
                await _send(send, *await self._dispatch(route, path_args, scope, receive))
                return
        allowed = sorted({m for r in ROUTES for m in ("GET", "POST") if r.match(m, path) is not None})
        if path == "/metrics":
            allowed = ["GET"]
        if allowed:
            await _send(send, *_error(405, "method_not_allowed", f"{method} is not allowed on {path}",
                                      {"allow": ", ".join(allowed)}))  # fmt: skip
            return
        await _send(send, *_error(404, "not_found", f"no route {path}"))

    async def _dispatch(
        self, route: Route, path_args: dict[str, str], scope: Scope, receive: Receive
    ) -> tuple[int, bytes, dict[str, str]]:
        from starlette.concurrency import run_in_threadpool

        try:
            argument: Any = None
            if route.body_model is not None:
                raw = await _read_body(receive)
                try:
                    payload = json.loads(raw) if raw else None
                except (ValueError, UnicodeDecodeError):
                    raise InvalidInput("request body must be a JSON object") from None
                if not isinstance(payload, dict):
                    raise InvalidInput("request body must be a JSON object")
                argument = route.body_model.model_validate(payload)
            if route.query_model is not None:
                query = route.query_model.model_validate(_query_params(scope))
                argument = query
            if route.path_model is not None:
                argument = (argument, route.path_model.model_validate(path_args))
            result = await run_in_threadpool(route.handler, self.memory, argument)
            return _json(route.status, result.model_dump(mode="json"))
        except ValidationError as exc:
            return _error(422, "invalid_input", _validation_message(exc))
        except GraymatterError as exc:
            status = _status_for(exc)
            message = exc.message.splitlines()[0] if exc.message else exc.code
            if status >= 500:
                log.warning("request failed: %s", message)
            return _error(status, exc.code, message)
        except ValueError as exc:
            return _error(422, "invalid_input", str(exc).splitlines()[0] if str(exc) else "invalid input")
        except Exception:
            log.exception("internal error serving %s %s", route.method, route.path)
            return _error(500, "internal", "internal error")


def build_app(
    memory: Any, tokens: TokenService | None, config: ServiceConfig, *, close_memory: bool = False
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The whole service as one ASGI app (REST + MCP + health + metrics + OpenAPI)."""
    from graymatter.faces.http.security import SecurityMiddleware, build_policy

    scoped = ScopedMemory(memory)
    rest = RestApp(scoped, config)
    mcp = None
    if config.mcp:
        from graymatter.faces.mcp_server.server import mcp_http_app

        mcp = mcp_http_app(scoped, path="/mcp", stateless=True)  # type: ignore[arg-type]

    async def authenticate(presented: str) -> str | None:
        if tokens is None:
            return None
        from starlette.concurrency import run_in_threadpool

        principal = await run_in_threadpool(tokens.authenticate, presented)
        if principal is None:
            return None
        _authenticated.set(principal)
        return principal.token_id

    policy = build_policy(
        config.host,
        config.port,
        token=None,
        no_auth=config.no_auth,
        authenticate=None if config.no_auth else authenticate,
        extra_hosts=config.extra_hosts,
        max_body_bytes=config.max_body_bytes,
    )
    limiter = RateLimiter(config.rate_limit, config.rate_burst)

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        principal = _authenticated.get()
        key = principal.token_id if principal is not None else (scope.get("client") or ("local",))[0]
        wait = limiter.take(key)
        if wait > 0:
            config.metrics.rate_limited += 1
            await _send(send, *_error(429, "rate_limited", "too many requests; slow down",
                                      {"retry-after": str(max(1, math.ceil(wait)))}))  # fmt: skip
            return
        with bind_principal(principal):
            if mcp is not None and (scope["path"] == "/mcp" or scope["path"].startswith("/mcp/")):
                await mcp.app(scope, receive, send)
            else:
                await rest(scope, receive, send)

    secured = SecurityMiddleware(inner, policy)
    openapi_body = json.dumps(openapi_document()).encode()

    async def health() -> tuple[int, bytes, dict[str, str]]:
        from starlette.concurrency import run_in_threadpool

        store = memory.store
        kind = "postgresql" if hasattr(store, "pool") else "sqlite"
        try:
            probe = getattr(store, "ping", None)
            await run_in_threadpool(probe if probe is not None else store.embedding_model)
        except Exception as exc:
            log.warning(
                "health check failed: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            )
            return _json(503, {"status": "unavailable", "store": kind, "version": __version__})
        return _json(200, {"status": "ok", "store": kind, "version": __version__})

    @contextlib.asynccontextmanager
    async def lifespan() -> Any:
        try:
            if mcp is not None:
                async with mcp.lifespan():
                    yield
            else:
                yield
        finally:
            if close_memory:
                from starlette.concurrency import run_in_threadpool

                await run_in_threadpool(memory.close)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(lifespan, receive, send)
            return
        if scope["type"] != "http":
            await secured(scope, receive, send)
            return
        started = time.perf_counter()
        status_box = [500]

        async def observed_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
            await send(message)

        config.metrics.in_flight += 1
        token = _authenticated.set(None)
        try:
            path, method = scope["path"], scope["method"]
            if path == "/healthz" and method == "GET":
                await _send(observed_send, *await health())
            elif path == "/openapi.json" and method == "GET":
                await _send(observed_send, 200, openapi_body, {"content-type": "application/json"})
            elif path in ("/healthz", "/openapi.json"):
                refusal = _error(
                    405, "method_not_allowed", f"{method} is not allowed on {path}", {"allow": "GET"}
                )
                await _send(observed_send, *refusal)
            else:
                await secured(scope, receive, observed_send)
        finally:
            principal = _authenticated.get()
            _authenticated.reset(token)
            config.metrics.in_flight -= 1
            elapsed = time.perf_counter() - started
            route = rest.route_name(scope["method"], scope["path"])
            config.metrics.observe(route, scope["method"], status_box[0], elapsed)
            _access_log(scope, route, status_box[0], elapsed, principal)

    return app


_authenticated: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "graymatter_authenticated", default=None
)


async def _lifespan(lifespan: Callable[[], Any], receive: Receive, send: Send) -> None:
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


def _access_log(scope: Scope, route: str, status: int, seconds: float, principal: Principal | None) -> None:
    if not log.isEnabledFor(logging.INFO):
        return
    record = {
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "info",
        "event": "http_request",
        "request_id": uuid.uuid4().hex[:16],
        "method": scope.get("method"),
        "route": route,
        "status": status,
        "duration_ms": round(seconds * 1000, 3),
        "token_id": principal.token_id if principal is not None else None,
        "client": (scope.get("client") or ("-",))[0],
    }
    log.info(json.dumps(record, separators=(",", ":")))


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line; request records are already JSON and pass through unchanged."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if message.startswith("{") and record.name == "graymatter.rest" and record.levelno == logging.INFO:
            return message
        payload = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": message.splitlines()[0] if message else "",
        }
        if record.exc_info and record.exc_info[0] is not None:
            payload["exception"] = record.exc_info[0].__name__
        return json.dumps(payload, separators=(",", ":"))


def configure_logging(level: int = logging.INFO) -> None:
    """Structured JSON logs on stderr for the service (idempotent)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLogFormatter())
    for name in ("graymatter", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
    logging.getLogger("uvicorn.access").disabled = True
