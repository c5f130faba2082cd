"""graymatter's MCP server: seven tools with strict, schema-validated structured results.

``build_server(memory)`` returns an :class:`mcp.server.mcpserver.MCPServer`. The wire contract lives here and
in docs/decisions/0001-checkpoint-resume-on-missing.md:

* every tool publishes a flat input schema and an output schema generated from pydantic models
  (root ``"type": "object"``, every result shape ``additionalProperties: false``);
* every success returns structuredContent that validates, and the same object as compact JSON text (clients
  that show the model only the text see the same information); every error is a text-only ``isError``
  result with no structuredContent key;
* ``checkpoint_resume`` takes ``on_missing`` (``"error"`` default, or ``"empty"``) as ADR 0001 specifies.

What is published (instructions, tool specs) lives in :mod:`graymatter.faces.mcp_server.specs`, the argument
and result models in :mod:`~graymatter.faces.mcp_server.schemas`, the argument rules in
:mod:`~graymatter.faces.mcp_server.arguments`, the tool bodies in :mod:`~graymatter.faces.mcp_server.tools`
the wording of failures in :mod:`~graymatter.faces.mcp_server.failures` and the way a result reaches the
wire in :mod:`~graymatter.faces.mcp_server.wire`. The MCP SDK is imported only
inside :func:`build_server`, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from pydantic import BaseModel, ConfigDict

from graymatter import __version__
from graymatter.faces.mcp_server.arguments import validate_arguments
from graymatter.faces.mcp_server.failures import error_text
from graymatter.faces.mcp_server.schemas import input_schema_of
from graymatter.faces.mcp_server.specs import INSTRUCTIONS, SERVER_NAME, TOOL_SPECS, ToolSpec
from graymatter.faces.mcp_server.tools import GraymatterTools
from graymatter.faces.mcp_server.wire import StructuredContentPassThrough, hold_back, json_text, wire_result
from graymatter.models import Provenance

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
    from mcp_types import CallToolResult

    from graymatter.engine.memory_api import MemoryAPI


PASS_THROUGH = frozenset({"state"})
"""Result fields whose values are JSON already (a checkpoint's state: the store's text as
:class:`~graymatter.faces.mcp_server.wire.RawJSON`, or decoded data): sent as they are instead of being
walked again by pydantic (about 10 ms for a 1 MB state)."""


def _structured(payload: BaseModel) -> dict[str, Any]:
    """``payload`` as JSON data in field order, without ``None`` fields, :data:`PASS_THROUGH` ones as is."""
    fields = type(payload).model_fields
    raw = {name: getattr(payload, name) for name in PASS_THROUGH & fields.keys()}
    dumped = payload.model_dump(mode="json", exclude_none=True, exclude=set(raw))
    return {
        name: raw[name] if name in raw else dumped[name] for name in fields if name in raw or name in dumped
    }


def _success(payload: BaseModel) -> CallToolResult:
    """A success: the result model dumped once, as structuredContent and as its compact JSON text.

    The payload is already a validated result model, so the SDK is not asked to validate it again (the
    tools register no output model, see :func:`_registered_tool`).
    """
    from mcp_types import CallToolResult, TextContent

    structured = _structured(payload)
    text = json_text(structured)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _failure(text: str) -> CallToolResult:
    """A failure: text only, ``isError``, no structuredContent key."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _client_provenance(ctx: Any) -> Provenance:
    client: str | None = None
    try:
        params = ctx.session.client_params
        if params is not None and params.client_info is not None:
            info = params.client_info
            client = f"{info.name}/{info.version}" if info.version else info.name
    except (AttributeError, ValueError, RuntimeError):
        client = None
    return Provenance(interface="mcp", client=client)


@dataclass
class ToolExecution:
    """Where the tool bodies of one server run: a worker thread each (the SDK's way for a sync tool, and
    the default: an HTTP server's sessions share one event loop), or on the event loop itself (``inline``,
    set by :func:`run_tools_inline` for a stdio session, which has one client)."""

    inline: bool = False


_EXECUTIONS: WeakKeyDictionary[Any, ToolExecution] = WeakKeyDictionary()


def run_tools_inline(server: MCPServer) -> None:
    """Run the tool bodies of ``server`` on its event loop instead of a worker thread each.

    For a stdio session: two thread hand-offs less per call (about 0.1-0.3 ms of a 5 ms search; more when
    the cores are busy). The GIL already serialised the bodies' CPU work; what changes is that a request
    arriving while a body runs (a second call, a cancel, a ping) is read when it ends.
    """
    _EXECUTIONS[server].inline = True


def _tool_body(spec: ToolSpec, tools: GraymatterTools, execution: ToolExecution) -> Callable[..., Any]:
    """The SDK-facing function of one tool: validate, run the body, and turn every failure into text."""
    from mcp.server.mcpserver import Context

    method = getattr(tools, spec.name)

    def body(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        try:
            parsed = validate_arguments(spec.name, spec.arguments, arguments)
            payload = method(parsed, _client_provenance(ctx))
        except Exception as exc:  # every failure becomes a text-only tool error
            return _failure(error_text(spec.name, exc))
        return _success(payload)

    async def run(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
        if execution.inline:
            return body(arguments, ctx)
        import anyio

        return await anyio.to_thread.run_sync(partial(body, arguments, ctx))

    run.__name__ = spec.name
    return run


def _raw_arguments_model() -> type[ArgModelBase]:
    """The SDK argument model of every tool: it hands the body the arguments exactly as sent."""
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

    class RawArguments(ArgModelBase):
        """Hands the tool body the arguments exactly as sent; validation happens in the body."""

        model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

        def model_dump_one_level(self) -> dict[str, Any]:
            return {"arguments": dict(self.model_extra or {})}

    return RawArguments


def _registered_tool(spec: ToolSpec, body: Callable[..., Any], raw_arguments: type[ArgModelBase]) -> Tool:
    """One tool as the SDK registers it: raw arguments in, our schemas and annotations published."""
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
    from mcp_types import ToolAnnotations

    annotations = ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=False,
        idempotent_hint=spec.read_only,
        open_world_hint=False,
    )
    # Published, not re-validated: every payload is built as the result model (see _success).
    metadata = FuncMetadata(arg_model=raw_arguments, output_schema=spec.output_schema, output_model=None)
    return Tool(
        fn=body,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=input_schema_of(spec.arguments),
        fn_metadata=metadata,
        is_async=True,
        context_kwarg="ctx",
        annotations=annotations,
    )


def build_server(memory: MemoryAPI, *, instructions: str | None = INSTRUCTIONS) -> MCPServer:
    """A fresh MCP server exposing the seven tools over ``memory``. Transport is chosen by the caller."""
    from mcp.server.mcpserver import MCPServer

    tools = GraymatterTools(memory)
    raw_arguments = _raw_arguments_model()
    execution = ToolExecution()
    bodies = {spec.name: _tool_body(spec, tools, execution) for spec in TOOL_SPECS}
    registered = [_registered_tool(spec, bodies[spec.name], raw_arguments) for spec in TOOL_SPECS]
    server = MCPServer(
        SERVER_NAME,
        instructions=instructions,
        version=__version__,
        tools=registered,
        log_level="WARNING",
        middleware=[StructuredContentPassThrough()],
    )
    _EXECUTIONS[server] = execution
    _trace_only_when_traced(server)
    _offer_tools_only(server)
    _call_bodies_directly(server, bodies)
    return server


def _trace_only_when_traced(server: MCPServer) -> None:
    """Drop the SDK's OpenTelemetry middleware when no tracer provider is installed.

    The SDK wraps every request in a span, which is a no-op until a tracer provider is set, but the no-op
    still costs about 20 µs a request (attributes, a span context attached and detached). A provider set
    before the server is built (``opentelemetry-instrument graymatter mcp serve``, or a library user's
    ``trace.set_tracer_provider``) keeps the spans.
    """
    from mcp.server._otel import OpenTelemetryMiddleware
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return
    lowlevel = server._lowlevel_server
    lowlevel.middleware = [m for m in lowlevel.middleware if not isinstance(m, OpenTelemetryMiddleware)]


UNOFFERED_METHODS = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
)
"""What MCPServer registers by default and graymatter does not offer (no prompts, no resources)."""


def _offer_tools_only(server: MCPServer) -> None:
    """Drop the prompt and resource handlers: the capabilities (derived from the handlers) then advertise
    tools only, and a prompt or resource request is answered ``-32601 Method not found``.

    The SDK has no public way to unregister a handler; ``tests/graymatter/faces/mcp_server/test_hygiene.py``
    pins the outcome, so an SDK upgrade that changes this fails there.
    """
    handlers: dict[str, Any] = server._lowlevel_server._request_handlers
    for method in UNOFFERED_METHODS:
        handlers.pop(method, None)


def _call_bodies_directly(server: MCPServer, bodies: dict[str, Callable[..., Any]]) -> None:
    """``tools/call`` runs the tool's body from the SDK's lowlevel handler, not through MCPServer's tool
    manager: the body validates its arguments and turns every failure into a result itself, so the
    manager's argument model, context object and result conversion were only cost (0.1-0.2 ms a call).
    The SDK still reads, validates, dispatches (its middleware included) and writes the request.

    A call naming no published tool is a protocol error, ``-32602 Unknown tool`` (MCP "Error Handling"),
    not a tool result the model would take for the tool's answer.
    """
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS, CallToolRequestParams

    async def checked(ctx: Any, params: CallToolRequestParams) -> Any:
        body = bodies.get(params.name)
        if body is None:
            raise MCPError(
                code=INVALID_PARAMS, message=f"Unknown tool: {params.name}", data={"name": params.name}
            )
        return hold_back(wire_result(await body(dict(params.arguments or {}), ctx)))

    server._lowlevel_server.add_request_handler("tools/call", CallToolRequestParams, checked)


@dataclass(frozen=True)
class McpHttpApp:
    """The MCP streamable-HTTP ASGI app for one Memory.

    ``app`` serves MCP at ``path`` and runs its own session manager in its lifespan when served directly.
    When mounted inside another ASGI app, enter ``lifespan()`` from the parent's lifespan instead (mounted
    apps do not receive lifespan events). Put
    :class:`graymatter.faces.http.security.SecurityMiddleware` in front.
    """

    app: Any
    path: str
    lifespan: Callable[[], Any]


def mcp_http_app(memory: MemoryAPI, *, path: str = "/mcp", stateless: bool = False) -> McpHttpApp:
    """Build the MCP streamable-HTTP app; ``stateless=True`` suits several servers behind a load balancer.

    Host/Origin checks, auth and the body cap belong to the shared security middleware, so the SDK's own
    loopback-only DNS-rebinding check is switched off here (it would refuse a load balancer's Host).
    """
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(memory)
    app = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=stateless,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return McpHttpApp(app=app, path=path, lifespan=lambda: server.session_manager.run())


__all__ = ["McpHttpApp", "ToolExecution", "build_server", "mcp_http_app", "run_tools_inline"]
