"""A connected MCP client session with the wire-contract checks built in, and its runner."""

from __future__ import annotations

import json
from typing import Any

import anyio
from jsonschema import Draft202012Validator


def initialize_request(client: str = "t", protocol_version: str = "2025-06-18") -> dict[str, Any]:
    """A raw JSON-RPC ``initialize`` request (id 1), for tests that speak the wire themselves."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol_version,
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


class Session:
    """One connected client plus the advertised schemas, with contract checks built in."""

    def __init__(self, client: Any, tools: list[Any]) -> None:
        self.client = client
        self.tools = {tool.name: tool for tool in tools}

    async def ok(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """Call a tool that must succeed; return (structuredContent, text) after validating both."""
        result = await self.client.call_tool(name, arguments)
        text = "".join(block.text for block in result.content if block.type == "text")
        assert not result.is_error, f"{name} failed: {text}"
        assert isinstance(result.structured_content, dict), f"{name} success without structuredContent"
        schema = self.tools[name].output_schema
        Draft202012Validator.check_schema(schema)
        errors = sorted(Draft202012Validator(schema).iter_errors(result.structured_content), key=str)
        assert not errors, f"{name}: structuredContent violates its schema: {errors[0]}"
        assert [block.type for block in result.content] == ["text"], f"{name}: one text block expected"
        assert json.loads(text) == result.structured_content, f"{name}: text is not the structured result"
        assert "\n" not in text and not text.startswith(("{ ", '{"\n')), f"{name}: text is not compact JSON"
        return result.structured_content, text

    async def error(self, name: str, arguments: dict[str, Any]) -> str:
        """Call a tool that must fail; return its text after checking it carries no structuredContent."""
        result = await self.client.call_tool(name, arguments)
        assert result.is_error, f"{name} unexpectedly succeeded"
        assert result.structured_content is None
        assert "structured_content" not in result.model_fields_set
        assert [block.type for block in result.content] == ["text"]
        return result.content[0].text


def run(connect: Any, body: Any) -> None:
    async def main() -> None:
        async with connect() as client:
            listed = await client.list_tools()
            await body(Session(client, listed.tools))

    anyio.run(main)
