"""Anthropic Messages API (`{base_url}/v1/messages`), streamed and not.

Translation rules: system messages go to the top-level `system`; tool results become
`tool_result` blocks placed first in the following user message; adjacent same-role messages are
merged; tool ids are sanitised to ^[a-zA-Z0-9_-]+$ and made unique per request, identically for a
call and its result; thinking blocks (with signatures) round-trip unchanged through
`Message.provider_state["anthropic"]["thinking"]` and are sent first in their assistant turn.
A prompt-cache breakpoint is set on the system prompt and on the last block of the conversation.
Streaming handles `ping` anywhere and an `error` event mid-stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack

from tinyagent.providers.adapter import HttpAdapter, HttpOptions
from tinyagent.providers.base import OnText, ProviderConnectionError, ProviderError, ProviderProtocolError
from tinyagent.providers.fields import index_field, mapping, text_field, token_field
from tinyagent.providers.history import (
    WireIds,
    anthropic_safe_id,
    arguments_object,
    distinct_call_ids,
    system_text,
)
from tinyagent.providers.http.retry import StreamProgress
from tinyagent.providers.sse import SSEEvent
from tinyagent.types import Completion, Message, ToolCall, ToolSpec, Usage

__all__ = ["ANTHROPIC_VERSION", "AnthropicProvider", "anthropic_usage"]

ANTHROPIC_VERSION = "2023-06-01"
STATE_KEY = "anthropic"
_CACHE = {"type": "ephemeral"}
_STOP_REASONS = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
}
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def anthropic_usage(raw: Mapping[str, Any] | None) -> Usage:
    """Normalise Anthropic usage (input_tokens already excludes cache reads and writes)."""
    raw = raw if isinstance(raw, Mapping) else {}
    return Usage(
        input_tokens=token_field(raw.get("input_tokens")),
        output_tokens=token_field(raw.get("output_tokens")),
        cache_read_tokens=token_field(raw.get("cache_read_input_tokens")),
        cache_write_tokens=token_field(raw.get("cache_creation_input_tokens")),
    )


def default_max_tokens(model: str) -> int:
    """Output budget: the Claude 3 (non-3.5/3.7) models cap output at 4096 tokens."""
    legacy = ("claude-3-haiku", "claude-3-opus", "claude-3-sonnet")
    return 4096 if any(name in model for name in legacy) else 8192


class AnthropicProvider(HttpAdapter):
    """The Anthropic Messages endpoint."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.anthropic.com",
        api_key: str | None = None,
        name: str = "anthropic",
        max_tokens: int | None = None,
        thinking_budget: int | None = None,
        prompt_cache: bool = True,
        key_hint: str | None = "ANTHROPIC_API_KEY",
        **options: Unpack[HttpOptions],
    ) -> None:
        base = base_url.rstrip("/")
        url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
        self.max_tokens = max_tokens or default_max_tokens(model)
        self.thinking_budget = thinking_budget
        self.prompt_cache = prompt_cache
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        super().__init__(name, model, url, headers, api_key=api_key, key_hint=key_hint, **options)

    # request ---------------------------------------------------------------------------------
    def _request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], stream: bool
    ) -> dict[str, Any]:
        ids = WireIds(messages, transform=anthropic_safe_id, unique=True)
        turns: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            if message.role == "system":
                continue
            role = "assistant" if message.role == "assistant" else "user"
            blocks = self._blocks(index, message, ids)
            if not blocks:
                continue
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"] = _ordered(role, turns[-1]["content"] + blocks)
            else:
                turns.append({"role": role, "content": blocks})
        if self.prompt_cache and turns:
            last = turns[-1]["content"][-1]
            if last.get("type") not in ("thinking", "redacted_thinking"):
                turns[-1]["content"][-1] = {**last, "cache_control": _CACHE}
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": turns}
        system = system_text(messages)
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if self.prompt_cache:
                block["cache_control"] = _CACHE
            body["system"] = [block]
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
            ]
        if self.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            body["max_tokens"] = max(self.max_tokens, self.thinking_budget + 4096)
        if stream:
            body["stream"] = True
        return body

    def _blocks(self, index: int, message: Message, ids: WireIds) -> list[dict[str, Any]]:
        if message.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": ids.result(index)}
            if message.content:
                block["content"] = message.content
            if message.is_error:
                block["is_error"] = True
            return [block]
        # The API rejects text blocks that are empty or whitespace only; such text carries nothing.
        if message.role == "user":
            return [{"type": "text", "text": message.content}] if _has_text(message.content) else []
        blocks: list[dict[str, Any]] = []
        state = (message.provider_state or {}).get(STATE_KEY)
        if isinstance(state, dict):
            blocks.extend(dict(b) for b in state.get("thinking") or [] if isinstance(b, dict))
        if _has_text(message.content):
            blocks.append({"type": "text", "text": message.content})
        for wire_id, call in zip(ids.calls(index), message.tool_calls, strict=True):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": wire_id,
                    "name": call.name,
                    "input": arguments_object(call.arguments),
                }
            )
        return blocks

    # response --------------------------------------------------------------------------------
    def _error(self, error: Any) -> ProviderError:
        return self._error_document(
            _ERROR_STATUS.get(text_field(mapping(error).get("type")) or "", 502), error
        )

    def _parse(self, data: Any) -> Completion:
        if not isinstance(data, dict):
            raise ProviderProtocolError(f"{self.name}: response is not a JSON object")
        if data.get("type") == "error":
            raise self._error(data.get("error"))
        content = data.get("content")
        if not isinstance(content, list):
            raise ProviderProtocolError(f"{self.name}: response has no content list")
        return self._completion(content, data.get("usage"), data.get("stop_reason"), data)

    def _completion(
        self, content: list[Any], usage: Any, stop_reason: Any, envelope: Mapping[str, Any]
    ) -> Completion:
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[dict[str, Any]] = []
        for block in content:
            if not isinstance(block, dict):
                raise ProviderProtocolError(f"{self.name}: content block is not an object")
            kind = block.get("type")
            if kind == "text":
                text.append(text_field(block.get("text")) or "")
            elif kind == "tool_use":
                call_id, name = text_field(block.get("id")), text_field(block.get("name"))
                if not call_id or not name:
                    raise ProviderProtocolError(f"{self.name}: tool_use block without id or name")
                arguments = block.get("input")
                raw = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments else {})
                calls.append(ToolCall(id=call_id, name=name, arguments=raw))
            elif kind in ("thinking", "redacted_thinking"):
                thinking.append(block)
        stop = text_field(stop_reason) or ("tool_use" if calls else "end_turn")
        message = Message(
            role="assistant",
            content="".join(text) or None,
            tool_calls=distinct_call_ids(calls),
            provider_state={STATE_KEY: {"thinking": thinking}} if thinking else None,
        )
        return Completion(
            message=message,
            usage=anthropic_usage(usage),
            finish_reason=_STOP_REASONS.get(stop, stop),
            model=text_field(envelope.get("model")) or self.model,
            response_id=text_field(envelope.get("id")),
        )

    def _consume(self, events: Iterator[SSEEvent], progress: StreamProgress, on_text: OnText) -> Completion:
        envelope: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        blocks: dict[int, dict[str, Any]] = {}
        partial_json: dict[int, list[str]] = {}
        stop_reason: Any = None
        done = False
        for event in events:
            data = self._event_json(event)
            kind = data.get("type") or event.event
            if kind == "message_start":
                envelope = dict(mapping(data.get("message")))
                usage.update({k: v for k, v in mapping(envelope.get("usage")).items() if v is not None})
            elif kind == "content_block_start":
                block = dict(mapping(data.get("content_block")))
                index = index_field(data.get("index"), len(blocks))
                if block.get("type") == "tool_use":
                    partial_json[index] = []
                blocks[index] = block
            elif kind == "content_block_delta":
                self._apply_delta(blocks, partial_json, data, progress, on_text)
            elif kind == "content_block_stop":
                index = index_field(data.get("index"), -1)
                if index in partial_json:
                    raw = "".join(partial_json.pop(index))
                    blocks[index]["input"] = _parse_partial(raw)
            elif kind == "message_delta":
                stop_reason = mapping(data.get("delta")).get("stop_reason") or stop_reason
                usage.update({k: v for k, v in mapping(data.get("usage")).items() if v is not None})
            elif kind == "message_stop":
                done = True
                break
            elif kind == "error":
                raise self._error(data.get("error"))
        if not done:
            raise ProviderConnectionError(f"{self.name}: the response stream ended before message_stop")
        content = [blocks[i] for i in sorted(blocks)]
        return self._completion(content, usage, stop_reason, envelope)

    def _apply_delta(
        self,
        blocks: dict[int, dict[str, Any]],
        partial_json: dict[int, list[str]],
        data: Mapping[str, Any],
        progress: StreamProgress,
        on_text: OnText,
    ) -> None:
        index = index_field(data.get("index"), -1)
        block = blocks.get(index)
        if block is None:
            raise ProviderProtocolError(f"{self.name}: delta for unknown content block {index}")
        delta = mapping(data.get("delta"))
        kind = delta.get("type")
        if kind == "text_delta":
            piece = text_field(delta.get("text")) or ""
            block["text"] = (text_field(block.get("text")) or "") + piece
            if piece and on_text is not None:
                progress.handed_out = True
                on_text(piece)
        elif kind == "input_json_delta":
            partial_json.setdefault(index, []).append(text_field(delta.get("partial_json")) or "")
        elif kind == "thinking_delta":
            block["thinking"] = (text_field(block.get("thinking")) or "") + (
                text_field(delta.get("thinking")) or ""
            )
        elif kind == "signature_delta":
            block["signature"] = (text_field(block.get("signature")) or "") + (
                text_field(delta.get("signature")) or ""
            )


def _has_text(content: str | None) -> bool:
    return bool(content and content.strip())


def _ordered(role: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merged same-role content: tool_result first (user), thinking first (assistant); stable."""
    first = ("tool_result",) if role == "user" else ("thinking", "redacted_thinking")
    return [b for b in blocks if b.get("type") in first] + [b for b in blocks if b.get("type") not in first]


def _parse_partial(raw: str) -> Any:
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # kept as text; the loop reports invalid arguments to the model
