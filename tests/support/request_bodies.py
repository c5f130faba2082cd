"""Reading a provider request body the way the model sees it, per wire format."""

from __future__ import annotations

from typing import Any


def tool_results(provider: str, body: dict[str, Any]) -> list[str]:
    """The tool-result texts the model received in one request body (anthropic, codex, or chat)."""
    if provider == "anthropic":
        return [
            block["content"] if isinstance(block["content"], str) else block["content"][0]["text"]
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
    if provider == "codex":
        return [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    return [message["content"] for message in body["messages"] if message["role"] == "tool"]
