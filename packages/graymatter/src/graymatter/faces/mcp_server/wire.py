"""A tool result on its way to the wire: handed to the SDK as a mapping, structuredContent walked once.

The SDK shapes every ``tools/call`` result for the negotiated protocol version: it validates the
result against that version's ``CallToolResult`` and dumps it (``serialize_server_result``), then the
JSON-RPC envelope is dumped once more when the line is written. For structuredContent, which that model
types as an open ``dict[str, Any]``, the first pass checks nothing and only copies: a walk over the whole
object (3-4 ms of a 1 MB checkpoint resume). So the ``tools/call`` handler hands the SDK the result with an
empty structuredContent (:func:`hold_back`), and :class:`StructuredContentPassThrough`, a middleware of the
SDK's own chain, puts the real object back into the SDK's finished result. The SDK still validates and
sieves everything else for the version; a version whose result had no structuredContent would drop the
key, and it would stay dropped (the SDK's surface keeps it for every version it speaks, 2024-11-05 on).
What is put back is JSON data already: a result model's ``model_dump(mode="json")`` plus the store's
decoded state; each tool's outputSchema is generated from that model.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

HELD: ContextVar[list[Any] | None] = ContextVar("graymatter_held_structured_content", default=None)
"""The structuredContent held back while the SDK shapes the current ``tools/call`` result (set by
:class:`StructuredContentPassThrough`, filled by :func:`hold_back`, same task)."""

STRUCTURED = "structuredContent"


def wire_result(result: Any) -> Any:
    """A :class:`CallToolResult` as the wire mapping, its structuredContent passed as it is.

    The SDK dumps a returned model (a walk over the whole structured content) before it validates and
    dumps the mapping for the negotiated protocol version; a mapping skips that first walk. Failures
    (no structuredContent) are left to the SDK as they are.
    """
    from mcp_types import CallToolResult

    if type(result) is not CallToolResult or result.structured_content is None:
        return result
    wire: dict[str, Any] = result.model_dump(
        by_alias=True, mode="json", exclude_none=True, exclude={"structured_content"}
    )
    wire[STRUCTURED] = result.structured_content
    return wire


def hold_back(wire: Any) -> Any:
    """``wire`` with its structuredContent replaced by ``{}`` and kept for the middleware to put back.

    Outside :class:`StructuredContentPassThrough` (nothing to put it back) ``wire`` is returned as it is.
    """
    held = HELD.get()
    if held is None or not isinstance(wire, dict) or STRUCTURED not in wire:
        return wire
    held.append(wire[STRUCTURED])
    return {**wire, STRUCTURED: {}}


class StructuredContentPassThrough:
    """SDK middleware: around ``tools/call``, put the held-back structuredContent into the shaped result."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        """Run the rest of the chain; for a ``tools/call`` whose result kept the key, restore its value."""
        if ctx.method != "tools/call":
            return await call_next(ctx)
        held: list[Any] = []
        token = HELD.set(held)
        try:
            result = await call_next(ctx)
        finally:
            HELD.reset(token)
        if len(held) == 1 and isinstance(result, dict) and STRUCTURED in result:
            result[STRUCTURED] = held[0]
        return result


__all__ = ["StructuredContentPassThrough", "hold_back", "wire_result"]
