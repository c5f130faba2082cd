"""OpenAI Responses API (`{base_url}/responses`), the wire format Codex uses; streamed and not.

The client owns the history (`store: false`): every request carries the full conversation as input
items. Tools are flat (`{type: "function", name, ...}`); calls and results pair by `call_id`, made
unique across the request identically for a call and its output. Reasoning items round-trip
verbatim through `Message.provider_state["responses"]["reasoning"]`; for reasoning models the
request asks for `reasoning.encrypted_content` so they can be replayed without server state, and a
reasoning item without encrypted content is never replayed (it would fail with store=false).
Streaming uses typed SSE events and ends at `response.completed | incomplete | failed` (no [DONE]).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack

from tinyagent.providers.adapter import HttpAdapter, HttpOptions, bearer_headers
from tinyagent.providers.base import OnText, ProviderConnectionError, ProviderError, ProviderProtocolError
from tinyagent.providers.fields import index_field, mapping, sequence, text_field, token_field
from tinyagent.providers.history import (
    WireIds,
    distinct_call_ids,
    system_text,
    wire_arguments,
)
from tinyagent.providers.http.retry import StreamProgress
from tinyagent.providers.sse import SSEEvent
from tinyagent.types import Completion, Message, ToolCall, ToolSpec, Usage

__all__ = ["ResponsesProvider", "is_reasoning_model", "responses_usage"]

STATE_KEY = "responses"
_REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(o\d|gpt-5|codex)", re.IGNORECASE)
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def is_reasoning_model(model: str) -> bool:
    """Models that produce reasoning items (o-series, gpt-5 family, codex)."""
    return bool(_REASONING_MODEL.match(model))


def responses_usage(raw: Mapping[str, Any] | None) -> Usage:
    """Normalise Responses usage (cached tokens are a subset of input_tokens)."""
    raw = raw if isinstance(raw, Mapping) else {}
    details = raw.get("input_tokens_details")
    cached = token_field(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    return Usage(
        input_tokens=max(0, token_field(raw.get("input_tokens")) - cached),
        output_tokens=token_field(raw.get("output_tokens")),
        cache_read_tokens=cached,
    )


class ResponsesProvider(HttpAdapter):
    """A Responses API endpoint (OpenAI, or any server speaking it)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        name: str = "codex",
        encrypted_reasoning: bool | None = None,
        key_hint: str | None = "OPENAI_API_KEY or CODEX_API_KEY",
        extra_headers: Mapping[str, str] | None = None,
        **options: Unpack[HttpOptions],
    ) -> None:
        self.encrypted_reasoning = (
            is_reasoning_model(model) if encrypted_reasoning is None else encrypted_reasoning
        )
        url = base_url.rstrip("/") + "/responses"
        headers = bearer_headers(api_key, extra_headers)
        super().__init__(name, model, url, headers, api_key=api_key, key_hint=key_hint, **options)

    # request ---------------------------------------------------------------------------------
    def _request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], stream: bool
    ) -> dict[str, Any]:
        ids = WireIds(messages, unique=True)
        items: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            if message.role == "system":
                continue
            if message.role == "user":
                content = [{"type": "input_text", "text": message.content or ""}]
                items.append({"type": "message", "role": "user", "content": content})
            elif message.role == "tool":
                output = message.content or ""
                items.append({"type": "function_call_output", "call_id": ids.result(index), "output": output})
            else:
                state = (message.provider_state or {}).get(STATE_KEY)
                if isinstance(state, dict):
                    for item in state.get("reasoning") or []:
                        if isinstance(item, dict) and item.get("encrypted_content"):
                            items.append(dict(item))
                if message.content:
                    content = [{"type": "output_text", "text": message.content}]
                    items.append({"type": "message", "role": "assistant", "content": content})
                for wire_id, call in zip(ids.calls(index), message.tool_calls, strict=True):
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": wire_id,
                            "name": call.name,
                            "arguments": wire_arguments(call.arguments),
                        }
                    )
        body: dict[str, Any] = {"model": self.model, "input": items, "store": False, "stream": stream}
        instructions = system_text(messages)
        if instructions:
            body["instructions"] = instructions
        if tools:
            body["tools"] = [
                {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
                for t in tools
            ]
        if self.encrypted_reasoning:
            body["include"] = ["reasoning.encrypted_content"]
        return body

    # response --------------------------------------------------------------------------------
    def _error(self, error: Any) -> ProviderError:
        fields = mapping(error)
        code = text_field(fields.get("code")) or text_field(fields.get("type")) or ""
        if "rate_limit" in code:
            status = 429
        elif code in ("server_error", "api_error", "") or "overloaded" in code:
            status = 500
        else:
            status = 400
        return self._error_document(status, error)

    def _parse(self, data: Any) -> Completion:
        if not isinstance(data, dict):
            raise ProviderProtocolError(f"{self.name}: response is not a JSON object")
        if data.get("status") == "failed" or (data.get("error") and not data.get("output")):
            raise self._error(data.get("error") or {})
        output = data.get("output")
        if not isinstance(output, list):
            raise ProviderProtocolError(f"{self.name}: response has no output list")
        return self._completion(output, data)

    def _completion(self, output: list[Any], response: Mapping[str, Any]) -> Completion:
        text: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[dict[str, Any]] = []
        for item in output:
            if not isinstance(item, dict):
                raise ProviderProtocolError(f"{self.name}: output item is not an object")
            kind = item.get("type")
            if kind == "message":
                for part in sequence(item.get("content")):
                    if isinstance(part, Mapping) and part.get("type") in ("output_text", "refusal"):
                        text.append(text_field(part.get("text")) or text_field(part.get("refusal")) or "")
            elif kind == "function_call":
                call_id, name = text_field(item.get("call_id")), text_field(item.get("name"))
                if not call_id or not name:
                    raise ProviderProtocolError(f"{self.name}: function_call item without call_id or name")
                arguments = item.get("arguments")
                raw = arguments if isinstance(arguments, str) and arguments.strip() else "{}"
                calls.append(ToolCall(id=call_id, name=name, arguments=raw))
            elif kind == "reasoning":
                reasoning.append(item)
        if response.get("status") == "incomplete":
            reason = text_field(mapping(response.get("incomplete_details")).get("reason"))
            finish = "length" if reason == "max_output_tokens" else (reason or "incomplete")
        else:
            finish = "tool_calls" if calls else "stop"
        message = Message(
            role="assistant",
            content="".join(text) or None,
            tool_calls=distinct_call_ids(calls),
            provider_state={STATE_KEY: {"reasoning": reasoning}} if reasoning else None,
        )
        return Completion(
            message=message,
            usage=responses_usage(response.get("usage")),
            finish_reason=finish,
            model=text_field(response.get("model")) or self.model,
            response_id=text_field(response.get("id")),
        )

    def _consume(self, events: Iterator[SSEEvent], progress: StreamProgress, on_text: OnText) -> Completion:
        items: dict[int, dict[str, Any]] = {}
        final: dict[str, Any] | None = None
        for event in events:
            data = self._event_json(event)
            kind = data.get("type") or event.event
            if kind == "response.output_text.delta":
                piece = text_field(data.get("delta")) or ""
                if piece and on_text is not None:
                    progress.handed_out = True
                    on_text(piece)
            elif kind == "response.output_item.done":
                item = data.get("item")
                if isinstance(item, dict):
                    items[index_field(data.get("output_index"), len(items))] = item
            elif kind in _TERMINAL:
                final = data.get("response") if isinstance(data.get("response"), dict) else {}
                break
            elif kind == "error":
                raise self._error(data.get("error") if isinstance(data.get("error"), dict) else data)
        if final is None:
            raise ProviderConnectionError(
                f"{self.name}: the response stream ended before the response completed"
            )
        if final.get("status") == "failed":
            raise self._error(final.get("error") or {})
        output = sequence(final.get("output")) or [items[i] for i in sorted(items)]
        return self._completion(output, final)
