"""graymatter's MCP server: seven tools with strict, schema-validated structured results.

``build_server(memory)`` returns an :class:`mcp.server.mcpserver.MCPServer`. The wire contract lives here and
in docs/decisions/0001-checkpoint-resume-on-missing.md:

* every tool publishes a flat input schema and an output schema generated from pydantic models
  (root ``"type": "object"``, every result shape ``additionalProperties: false``);
* every success returns structuredContent that validates, plus equivalent text; every error is a text-only
  ``isError`` result with no structuredContent key;
* ``checkpoint_resume`` takes ``on_missing`` (``"error"`` default, or ``"empty"``) as ADR 0001 specifies.

Tool bodies are thin: they validate arguments, call :class:`graymatter.engine.memory.Memory` and shape
the result. The argument and result models live in :mod:`graymatter.faces.mcp_server.schemas`, the tool
bodies in :mod:`graymatter.faces.mcp_server.tools`. The MCP SDK is imported only inside
:func:`build_server`, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from graymatter import __version__
from graymatter.faces.mcp_server.schemas import (
    ArgumentsModel,
    CheckpointResumeArguments,
    CheckpointResumeEmpty,
    CheckpointResumeResult,
    CheckpointSaveArguments,
    CheckpointSaveResult,
    MemoryAddArguments,
    MemoryAddResult,
    MemoryAliasArguments,
    MemoryAliasResult,
    MemoryReflectArguments,
    MemoryReflectResult,
    MemorySearchArguments,
    MemorySearchBatchArguments,
    MemorySearchBatchResult,
    MemorySearchResult,
    checkpoint_resume_output_schema,
    input_schema_of,
    output_schema_of,
)
from graymatter.faces.mcp_server.tools import GraymatterTools, error_text, validate_arguments
from graymatter.models import Provenance

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult

    from graymatter.engine.memory_api import MemoryAPI

SERVER_NAME = "graymatter"

INSTRUCTIONS = (
    "graymatter is your durable memory across sessions. Follow this protocol.\n"
    '1. At session start call checkpoint_resume with on_missing "empty" to restore saved state, then '
    'memory_search for the task with your agent_id and again with agent_id "__shared__" for project-wide '
    "memory (memory_search_batch answers several questions in one call).\n"
    "2. Store each durable learning (decision, preference, gotcha) as one sentence with memory_add. "
    "Never store transcripts or secrets.\n"
    "3. When a stored fact is wrong or outdated, call memory_reflect with action update and the exact old "
    "text as target; never leave both versions live.\n"
    "4. In long sessions and before you stop, call checkpoint_save with a JSON object saying where you are.\n"
    "5. On a weak match, reformulate once, then declare lasting synonyms with memory_alias."
)
"""Static server instructions sent at initialize (never derived from stored data; ≤ 240 tokens)."""


# ----------------------------------------------------------------------------------------------------
# Tool definitions.
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """Everything published about one tool."""

    name: str
    title: str
    description: str
    arguments: type[ArgumentsModel]
    output_model: Any
    output_schema: dict[str, Any]
    read_only: bool


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="memory_search",
        title="Search agent memory",
        description=(
            "Search one agent's durable memory with hybrid recall (keyword, semantic and recency signals). "
            "Use it before answering anything earlier sessions may have settled: once with your agent_id and "
            'once with agent_id "__shared__" for project-wide memory. Returns a numbered list with a count '
            'header, or "No memories found" when nothing matches; superseded facts never appear. '
            "explain=true adds a ranking receipt per fact. Store new facts with memory_add, correct "
            "wrong ones with memory_reflect, and ask several questions at once with memory_search_batch."
        ),
        arguments=MemorySearchArguments,
        output_model=MemorySearchResult,
        output_schema=output_schema_of(MemorySearchResult),
        read_only=True,
    ),
    ToolSpec(
        name="memory_search_batch",
        title="Search agent memory with several queries at once",
        description=(
            "Search one agent's durable memory with several queries in one call; put every open question "
            "in one call. Ranking per query is identical to memory_search. Use it at session start or "
            "before a task that touches several topics. Returns each query's facts plus a merged, "
            "de-duplicated list (best rank first); a failing query reports its error and the others still "
            "answer. Errors when no query is given."
        ),
        arguments=MemorySearchBatchArguments,
        output_model=MemorySearchBatchResult,
        output_schema=output_schema_of(MemorySearchBatchResult),
        read_only=True,
    ),
    ToolSpec(
        name="memory_add",
        title="Store a durable fact",
        description=(
            "Store one durable fact: a decision, preference, constraint or gotcha, as one atomic sentence. "
            "Use it whenever you learn something a later session should know; do not store transcripts or "
            "secrets. Returns the new fact id and its confidence label. To correct or retire a stored fact "
            "use memory_reflect instead of adding a contradiction. Errors on blank or oversized text."
        ),
        arguments=MemoryAddArguments,
        output_model=MemoryAddResult,
        output_schema=output_schema_of(MemoryAddResult),
        read_only=False,
    ),
    ToolSpec(
        name="memory_alias",
        title="Teach the store a vocabulary alias",
        description=(
            "Declare that a term and its equivalents mean the same thing in one agent's vocabulary, so "
            "later memory_search calls bridge them. Use it after a weak match when you know a lasting "
            "synonym. Aliases are never returned as memories; declaring again adds another alias. Returns "
            "the stored alias and its id."
        ),
        arguments=MemoryAliasArguments,
        output_model=MemoryAliasResult,
        output_schema=output_schema_of(MemoryAliasResult),
        read_only=False,
    ),
    ToolSpec(
        name="checkpoint_save",
        title="Save a session checkpoint",
        description=(
            "Persist a session checkpoint: a JSON object describing where you are (task, progress, next "
            "steps). Use it in long sessions and before you stop; checkpoint_resume loads the latest one "
            "next time. Every save is kept under a new id. Returns the checkpoint id and creation time. "
            "Errors when state is not a JSON object."
        ),
        arguments=CheckpointSaveArguments,
        output_model=CheckpointSaveResult,
        output_schema=output_schema_of(CheckpointSaveResult),
        read_only=False,
    ),
    ToolSpec(
        name="checkpoint_resume",
        title="Load the latest checkpoint",
        description=(
            "Read the latest checkpoint saved with checkpoint_save for an agent. Use it at session start. "
            "Returns the checkpoint id, creation time and saved state. When the agent has none: with "
            'on_missing "error" (default) it is a tool error; with on_missing "empty" it is a success '
            '{"found": false, "agent_id": ...}. Storage failures are always errors.'
        ),
        arguments=CheckpointResumeArguments,
        output_model=CheckpointResumeResult | CheckpointResumeEmpty,
        output_schema=checkpoint_resume_output_schema(),
        read_only=True,
    ),
    ToolSpec(
        name="memory_reflect",
        title="Curate your own memory",
        description=(
            "Curate your own memory: add a fact, update a wrong one (the old text is superseded, never "
            "deleted), forget, pin or unpin facts by exact text, or link two named entities. Use it when a "
            "stored fact is wrong, outdated or vital; plain new facts go to memory_add. Identify yourself "
            "with agent_id (agent is a deprecated alias). Returns what changed. Errors when the target text "
            "matches no live fact."
        ),
        arguments=MemoryReflectArguments,
        output_model=MemoryReflectResult,
        output_schema=output_schema_of(MemoryReflectResult),
        read_only=False,
    ),
)

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOL_SPECS)


# ----------------------------------------------------------------------------------------------------
# Server assembly.
# ----------------------------------------------------------------------------------------------------


def _tool_call_result(payload: BaseModel | None, text: str, *, error: bool = False) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    content = [TextContent(type="text", text=text)]
    if error or payload is None:
        return CallToolResult(content=content, is_error=True)
    return CallToolResult(
        content=content, structured_content=payload.model_dump(mode="json", exclude_none=True)
    )


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


def build_server(memory: MemoryAPI, *, instructions: str | None = INSTRUCTIONS) -> MCPServer:
    """A fresh MCP server exposing the seven tools over ``memory``. Transport is chosen by the caller."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
    from mcp_types import ToolAnnotations

    class RawArguments(ArgModelBase):
        """Hands the tool body the arguments exactly as sent; validation happens in the body."""

        model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

        def model_dump_one_level(self) -> dict[str, Any]:
            return {"arguments": dict(self.model_extra or {})}

    tools = GraymatterTools(memory)

    def make_body(spec: ToolSpec) -> Callable[..., CallToolResult]:
        method = getattr(tools, spec.name)

        def body(arguments: dict[str, Any], ctx: Context) -> CallToolResult:
            try:
                parsed = validate_arguments(spec.name, spec.arguments, arguments)
                payload, text = method(parsed, _client_provenance(ctx))
            except Exception as exc:  # every failure becomes a text-only tool error
                return _tool_call_result(None, error_text(spec.name, exc), error=True)
            return _tool_call_result(payload, text)

        body.__name__ = spec.name
        return body

    registered = []
    for spec in TOOL_SPECS:
        annotations = ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=spec.read_only,
            open_world_hint=False,
        )
        metadata = FuncMetadata(
            arg_model=RawArguments, output_schema=spec.output_schema, output_model=spec.output_model
        )
        registered.append(
            Tool(
                fn=make_body(spec),
                name=spec.name,
                title=spec.title,
                description=spec.description,
                parameters=input_schema_of(spec.arguments),
                fn_metadata=metadata,
                is_async=False,
                context_kwarg="ctx",
                annotations=annotations,
            )
        )
    return MCPServer(
        SERVER_NAME, instructions=instructions, version=__version__, tools=registered, log_level="WARNING"
    )


def estimate_tokens(text: str) -> float:
    """The instructions budget estimator: words × 1.33."""
    return len(text.split()) * 1.33


# ----------------------------------------------------------------------------------------------------
# Streamable HTTP.
# ----------------------------------------------------------------------------------------------------


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


__all__ = [
    "INSTRUCTIONS",
    "SERVER_NAME",
    "TOOL_NAMES",
    "TOOL_SPECS",
    "McpHttpApp",
    "ToolSpec",
    "build_server",
    "estimate_tokens",
    "mcp_http_app",
]
