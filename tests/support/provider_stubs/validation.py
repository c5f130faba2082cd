"""Request checks: what the real providers reject, answered with their own error text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def wire_for(path: str) -> str:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    return "unknown"


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def validate_chat(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    pending: list[str] = []
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}].role is invalid"
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls'. (messages[{i}])"
                )
            pending.remove(call_id)
            if not isinstance(msg.get("content"), str):
                return f"messages[{i}].content must be a string"
        else:
            if pending:
                return (
                    "An assistant message with 'tool_calls' must be followed by tool messages responding "
                    f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(pending)}"
                )
            if role == "assistant":
                ids = []
                for call in msg.get("tool_calls") or []:
                    fn = call.get("function") or {}
                    if call.get("type") != "function" or not isinstance(fn.get("arguments"), str):
                        return (
                            f"messages[{i}].tool_calls: each call needs type 'function' and string arguments"
                        )
                    if not _json_object(fn["arguments"]):
                        # Ollama (and vLLM) parse history arguments: broken JSON bricks the session.
                        return f"messages[{i}].tool_calls: invalid tool call arguments"
                    ids.append(call.get("id"))
                if len(set(ids)) != len(ids):
                    return f"messages[{i}].tool_calls: duplicate tool call id"
                pending = list(ids)
                if msg.get("content") is None and not ids:
                    return f"messages[{i}]: assistant message needs content or tool_calls"
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: "
            f"{', '.join(pending)}"
        )
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or "name" not in (tool.get("function") or {}):
            return "tools: each tool needs type 'function' and function.name"
    return None


def validate_anthropic(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
    if "anthropic-version" not in headers:
        return "anthropic-version: header is required"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    previous_tool_uses: list[str] = []
    previous_role = None
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if i == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        if role == previous_role:
            return 'messages: roles must alternate between "user" and "assistant"'
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            return f"messages.{i}: content must be a non-empty string or list of blocks"
        if role == "user":
            problem = _user_turn_problem(i, blocks, previous_tool_uses)
            if problem:
                return problem
            previous_tool_uses = []
        else:
            uses: list[str] = []
            problem = _assistant_turn_problem(i, blocks, uses)
            if problem:
                return problem
            previous_tool_uses = uses
        previous_role = role
    if previous_tool_uses:
        return (
            f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` blocks "
            "immediately "
            f"after: {', '.join(previous_tool_uses)}."
        )
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return "system: Input should be a valid string or list"
    for tool in body.get("tools") or []:
        if "name" not in tool or "input_schema" not in tool:
            return "tools: each tool needs name and input_schema"
    return None


def _user_turn_problem(i: int, blocks: list[Any], previous_tool_uses: list[str]) -> str | None:
    """A user turn: tool results first, each answering a tool_use of the previous turn, none missing."""
    results = []
    seen_other = False
    for block in blocks:
        if block.get("type") == "tool_result":
            if seen_other:
                return f"messages.{i}: tool_result blocks must come before any other content"
            results.append(block.get("tool_use_id"))
        else:
            seen_other = True
            if block.get("type") == "text" and not str(block.get("text") or "").strip():
                return f"messages.{i}: text content blocks must contain non-whitespace text"
    for rid in results:
        if rid not in previous_tool_uses:
            return (
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{rid}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
                "message."
            )
    missing = [t for t in previous_tool_uses if t not in results]
    if missing:
        return (
            f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message."
        )
    return None


def _assistant_turn_problem(i: int, blocks: list[Any], uses: list[str]) -> str | None:
    """An assistant turn: thinking first and signed, well-formed unique tool_use ids (appended to uses)."""
    seen_non_thinking = False
    for block in blocks:
        kind = block.get("type")
        if kind in ("thinking", "redacted_thinking"):
            if seen_non_thinking:
                return f"messages.{i}: thinking blocks must come first"
            if kind == "thinking" and not block.get("signature"):
                return f"messages.{i}: thinking block is missing its signature"
            continue
        seen_non_thinking = True
        if kind == "tool_use":
            tid = block.get("id")
            if not isinstance(tid, str) or not ANTHROPIC_ID.match(tid):
                return f"messages.{i}.content: tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
            if not isinstance(block.get("input"), dict):
                return f"messages.{i}.content: tool_use.input: Input should be a valid dictionary"
            uses.append(tid)
        elif kind == "text":
            if not str(block.get("text") or "").strip():
                return f"messages.{i}: text content blocks must contain non-whitespace text"
        elif kind == "tool_result":
            return f"messages.{i}: tool_result blocks are only allowed in user messages"
    if len(set(uses)) != len(uses):
        return f"messages.{i}: `tool_use` ids must be unique"
    return None


def validate_responses(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list) or not items:
        return "input: must be a string or a non-empty array of items"
    calls: set[str] = set()
    outputs: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            cid = item.get("call_id")
            if cid in calls:
                return f"input[{i}]: Duplicate item found with call_id {cid}."
            if not isinstance(item.get("arguments"), str) or not _json_object(item["arguments"]):
                return f"input[{i}].arguments: expected a JSON object string"
            calls.add(cid)
        elif kind == "function_call_output":
            cid = item.get("call_id")
            if cid not in calls:
                return f"No tool call found for function call output with call_id {cid}."
            outputs.add(cid)
        elif kind == "reasoning":
            if not body.get("store", True) and "encrypted_content" not in item:
                return (
                    f"Item with id '{item.get('id')}' not found. "
                    "Items are not persisted when `store` is set to false."
                )
        elif kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                return f"input[{i}].role is invalid"
        else:
            return f"input[{i}].type '{kind}' is not supported by the stub"
    missing = sorted(calls - outputs)
    if missing:
        return f"No tool output found for function call {missing[0]}."
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or "name" not in tool or "function" in tool:
            return "tools: function tools are flat: {type: 'function', name, parameters}"
    return None


VALIDATORS = {"chat": validate_chat, "anthropic": validate_anthropic, "responses": validate_responses}
