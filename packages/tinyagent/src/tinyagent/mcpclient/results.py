"""MCP tools as the model sees them: `mcp__<server>__<tool>` specs, and a call's result as one observation."""

from __future__ import annotations

import json
import re
from typing import Any

from tinyagent.tools.capping import cap_output
from tinyagent.tools.text import clean_text
from tinyagent.tools.toolbox import ToolResult
from tinyagent.types import ToolSpec

__all__ = ["PREFIX", "is_mcp_tool", "offered_name", "render_result", "tool_spec"]

PREFIX = "mcp__"
MAX_NAME_CHARS = 64  # the longest tool name every provider accepts
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def offered_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, characters providers refuse replaced by `_`, at most 64 characters."""
    return (PREFIX + server + "__" + _UNSAFE.sub("_", tool))[:MAX_NAME_CHARS]


def is_mcp_tool(name: str) -> bool:
    """Whether a tool name is one of an MCP server's."""
    return name.startswith(PREFIX)


def tool_spec(server: str, tool: Any) -> ToolSpec:
    """The spec offered for one listed MCP tool: its description and input schema, unchanged."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else _EMPTY_SCHEMA
    description = clean_text(tool.description or tool.title or tool.name)
    return ToolSpec(
        name=offered_name(server, tool.name),
        description=f"[MCP server {server}] {description}",
        parameters=dict(schema),
    )


def render_result(result: Any, output_cap: int) -> ToolResult:
    """One observation from a `CallToolResult`: its text blocks, else its structured content as JSON."""
    parts: list[str] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} content ({getattr(block, 'mime_type', '')}) not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content not shown]")
    text = "\n".join(parts)
    structured = getattr(result, "structured_content", None)
    if not text.strip() and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, sort_keys=True)
    capped = cap_output(clean_text(text).encode("utf-8"), output_cap)
    if result.is_error:
        return ToolResult(f"error: {capped}", True)
    return ToolResult(capped)
