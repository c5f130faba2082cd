"""The OpenAPI 3.1 document of the REST API, generated from the route table and the wire models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from graymatter import __version__
from graymatter.faces.http.routes import ROUTES, Route
from graymatter.faces.http.wire import ErrorResponse, Health

_DESCRIPTIONS = {
    401: "Missing or invalid bearer token",
    403: "Token not allowed for this agent namespace or operation (nothing changed)",
    404: "No matching fact or checkpoint",
    409: "Another writer revised or forgot the fact first (nothing changed)",
    413: "Request body too large",
    415: "Request body is not application/json",
    422: "Invalid input (nothing changed)",
    429: "Rate limit exceeded; retry after the Retry-After seconds",
    503: "Store unavailable",
}


class _Schemas:
    """The component schemas of every model the routes use, and ``$ref``s to them."""

    def __init__(self) -> None:
        models: set[type[BaseModel]] = {ErrorResponse, Health}
        for route in ROUTES:
            models.add(route.response_model)
            if route.body_model is not None:
                models.add(route.body_model)
        bodies = {r.body_model for r in ROUTES}
        ordered = sorted(models, key=lambda m: m.__name__)
        modes: list[tuple[type[BaseModel], JsonSchemaMode]] = [
            (m, "validation" if m in bodies else "serialization") for m in ordered
        ]
        refs, top = models_json_schema(modes, ref_template="#/components/schemas/{model}")
        self._refs = refs
        self.components: dict[str, Any] = top.get("$defs", {})

    def ref(self, model: type[BaseModel], mode: JsonSchemaMode = "serialization") -> dict[str, Any]:
        return self._refs[(model, mode)]

    def json(self, model: type[BaseModel], mode: JsonSchemaMode = "serialization") -> dict[str, Any]:
        return {"application/json": {"schema": self.ref(model, mode)}}

    def error(self, status: int) -> dict[str, Any]:
        return {"description": _DESCRIPTIONS[status], "content": self.json(ErrorResponse)}


def _parameters(route: Route) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = []
    for location, model in (("query", route.query_model), ("path", route.path_model)):
        if model is None:
            continue
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        required = set(schema.get("required", []))
        for name, prop in schema["properties"].items():
            param_schema = {k: v for k, v in prop.items() if k not in {"title", "description"}}
            parameters.append({
                "name": name,
                "in": location,
                "required": location == "path" or name in required,
                "description": prop.get("description", ""),
                "schema": param_schema,
            })  # fmt: skip
    return parameters


def _operation(route: Route, schemas: _Schemas) -> dict[str, Any]:
    responses: dict[str, Any] = {
        str(route.status): {"description": "Success", "content": schemas.json(route.response_model)},
    }
    for status in (*route.errors, *((413, 415) if route.body_model else ())):
        responses[str(status)] = schemas.error(status)
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "security": [{"bearer": []}],
        "parameters": _parameters(route),
        "responses": responses,
    }
    if route.body_model is not None:
        operation["requestBody"] = {"required": True, "content": schemas.json(route.body_model, "validation")}
    return operation


def _service_paths(schemas: _Schemas) -> dict[str, Any]:
    """``/healthz`` and ``/metrics``: served beside the REST routes, not from the route table."""
    health = schemas.json(Health)
    return {
        "/healthz": {"get": {
            "operationId": "healthz",
            "summary": "Readiness: round-trips the store (no auth)",
            "security": [],
            "responses": {"200": {"description": "Ready", "content": health},
                          "503": {"description": "Store unavailable", "content": health}},
        }},
        "/metrics": {"get": {
            "operationId": "metrics",
            "summary": "Prometheus metrics (text exposition format 0.0.4)",
            "security": [{"bearer": []}],
            "responses": {
                "200": {"description": "Metrics", "content": {"text/plain": {"schema": {"type": "string"}}}},
                "401": schemas.error(401),
            },
        }},
    }  # fmt: skip


def openapi_document(server_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document, generated from :data:`ROUTES` and the pydantic models."""
    schemas = _Schemas()
    paths: dict[str, Any] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, schemas)
    paths.update(_service_paths(schemas))
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "graymatter", "version": __version__,
                 "description": "Agent memory and checkpoints. MCP (streamable HTTP) is served at /mcp."},
        "paths": paths,
        "components": {"schemas": schemas.components,
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
    }  # fmt: skip
    if server_url:
        document["servers"] = [{"url": server_url}]
    return document
