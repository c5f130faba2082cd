"""OpenAI-compatible Chat Completions: OpenAI, OpenRouter, Ollama's /v1 and any compatible base URL.

Streaming asks for `stream_options.include_usage`; tool-call fragments are merged by `index`
(Ollama sends each call whole, OpenAI in pieces); the usage-only final chunk may carry
`choices: []`, `choices: null` or no `choices` at all. OpenRouter's `usage.cost` becomes
`Usage.cost_usd`. Reasoning text/details returned by OpenRouter-, Ollama- or vLLM-style servers are
kept in `Message.provider_state["openai_chat"]` and sent back only to the provider that produced them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack

from tinyagent.providers.adapter import HttpAdapter, HttpOptions, bearer_headers
from tinyagent.providers.base import OnText, ProviderConnectionError, ProviderProtocolError
from tinyagent.providers.chat_stream import ChatStream
from tinyagent.providers.fields import cost_field, mapping, sequence, text_field, token_field
from tinyagent.providers.history import PairingChecker, distinct_call_ids, wire_arguments
from tinyagent.providers.http.retry import StreamProgress
from tinyagent.providers.sse import SSEEvent
from tinyagent.types import Completion, Message, ToolCall, ToolSpec, Usage

__all__ = ["OpenAIChatProvider", "chat_usage"]

STATE_KEY = "openai_chat"


def chat_usage(raw: Mapping[str, Any] | None) -> Usage:
    """Normalise a Chat Completions `usage` object (cached and cache-write tokens are inside prompt)."""
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    prompt = token_field(raw.get("prompt_tokens"))
    cached = token_field(details.get("cached_tokens"))
    written = token_field(details.get("cache_write_tokens"))
    return Usage(
        input_tokens=max(0, prompt - cached - written),
        output_tokens=token_field(raw.get("completion_tokens")),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        cost_usd=cost_field(raw.get("cost")),
    )


class OpenAIChatProvider(HttpAdapter):
    """A Chat Completions endpoint (`{base_url}/chat/completions`)."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        name: str = "openai",
        key_hint: str | None = "OPENAI_API_KEY",
        extra_headers: Mapping[str, str] | None = None,
        **options: Unpack[HttpOptions],
    ) -> None:
        url = base_url.rstrip("/") + "/chat/completions"
        headers = bearer_headers(api_key, extra_headers)
        super().__init__(name, model, url, headers, api_key=api_key, key_hint=key_hint, **options)

        # see request_payload: (message, its JSON, the pairing state after it)
        self._encoded: list[tuple[Message, str, tuple[tuple[str, ...], int | None]]] = []
        self._encoded_tools: tuple[list[ToolSpec], str] = ([], "")

    # request ---------------------------------------------------------------------------------
    def _request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._wire_message(m) for m in messages],
            "stream": stream,
        }
        if tools:
            body["tools"] = [_wire_tool(t) for t in tools]
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def request_payload(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool
    ) -> bytes:
        """`build_request` encoded as UTF-8 JSON, re-encoding only what changed since the last call.

        The agent's history only grows and a message is never mutated once appended, so the JSON of
        every message object already encoded (same object, same position) is reused; any other
        history is simply encoded afresh. Chat Completions puts stored ids on the wire unchanged, so
        a message's wire form depends on that message alone.
        """
        cache = self._encoded
        keep = _keep_reused_prefix(cache, messages)
        # The pairing check (as check_pairing) resumes after the reused prefix: each entry keeps the
        # checker state after its message, and a message enters the cache only once it passed.
        checker = PairingChecker(self.name, cache[keep - 1][2] if keep else ((), None))
        for index in range(keep, len(messages)):
            message = messages[index]
            checker.feed(index, message)
            text = json.dumps(self._wire_message(message), ensure_ascii=False)
            cache.append((message, text, checker.state()))
        checker.finish()
        parts = [
            '{"model": ',
            json.dumps(self.model, ensure_ascii=False),
            ', "messages": [',
            ", ".join(entry[1] for entry in cache),
            '], "stream": ',
            "true" if stream else "false",
        ]
        if tools:
            tool_list = list(tools)
            cached_tools, tools_text = self._encoded_tools
            if not _same_objects(cached_tools, tool_list):
                tools_text = json.dumps([_wire_tool(t) for t in tool_list], ensure_ascii=False)
                self._encoded_tools = (tool_list, tools_text)
            parts += [', "tools": ', tools_text]
        if stream:
            parts.append(', "stream_options": {"include_usage": true}')
        parts.append("}")
        return "".join(parts).encode("utf-8")

    def _wire_message(self, message: Message) -> dict[str, Any]:
        if message.role in ("system", "user"):
            return {"role": message.role, "content": message.content or ""}
        if message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": wire_arguments(c.arguments)},
                    }
                    for c in message.tool_calls
                ]
            elif message.content is None:
                item["content"] = ""
            state = (message.provider_state or {}).get(STATE_KEY)
            if isinstance(state, dict) and state.get("provider") == self.name:
                for key in ("reasoning", "reasoning_content", "reasoning_details"):
                    if state.get(key):
                        item[key] = state[key]
            return item
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}

    # response --------------------------------------------------------------------------------
    def _embedded_error(self, error: Any) -> Exception:
        status = 502
        code = mapping(error).get("code")
        if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
            status = code
        return self._error_document(status, error)

    def _parse(self, data: Any) -> Completion:
        if not isinstance(data, dict):
            raise ProviderProtocolError(f"{self.name}: response is not a JSON object")
        choices = sequence(data.get("choices"))
        if not choices:
            if data.get("error"):
                raise self._embedded_error(data["error"])
            raise ProviderProtocolError(f"{self.name}: response has no choices")
        choice = mapping(choices[0])
        raw = choice.get("message")
        if not isinstance(raw, Mapping):
            raise ProviderProtocolError(f"{self.name}: response choice has no message")
        calls = []
        for position, tc in enumerate(sequence(raw.get("tool_calls"))):
            fn = mapping(mapping(tc).get("function"))
            calls.append(
                self._tool_call(mapping(tc).get("id"), fn.get("name"), fn.get("arguments"), position)
            )
        state = {k: raw[k] for k in ("reasoning", "reasoning_content", "reasoning_details") if raw.get(k)}
        message = Message(
            role="assistant",
            content=_text(raw.get("content")),
            tool_calls=distinct_call_ids(calls),
            provider_state={STATE_KEY: {"provider": self.name, **state}} if state else None,
        )
        return Completion(
            message=message,
            usage=chat_usage(data.get("usage")),
            finish_reason=text_field(choice.get("finish_reason")) or ("tool_calls" if calls else "stop"),
            model=text_field(data.get("model")) or self.model,
            response_id=text_field(data.get("id")),
        )

    def _tool_call(self, call_id: Any, name: Any, arguments: Any, position: int) -> ToolCall:
        if not isinstance(name, str) or not name:
            raise ProviderProtocolError(f"{self.name}: tool call {position} has no function name")
        if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return ToolCall(id=text_field(call_id) or f"call_{position}", name=name, arguments=arguments)

    def _consume(self, events: Iterator[SSEEvent], progress: StreamProgress, on_text: OnText) -> Completion:
        stream = ChatStream(progress, on_text)
        done = False
        for event in events:
            if event.data.strip() == "[DONE]":
                done = True
                break
            chunk = self._event_json(event)
            if chunk.get("error"):
                raise self._embedded_error(chunk["error"])
            stream.add(chunk)
        if not done and stream.finish is None:
            raise ProviderConnectionError(
                f"{self.name}: the response stream ended before the reply was complete"
            )
        tool_calls = [
            self._tool_call(call_id, name, arguments, position)
            for position, (call_id, name, arguments) in enumerate(stream.call_parts())
        ]
        state = stream.reasoning_state()
        message = Message(
            role="assistant",
            content="".join(stream.text) if stream.text else None,
            tool_calls=distinct_call_ids(tool_calls),
            provider_state={STATE_KEY: {"provider": self.name, **state}} if state else None,
        )
        return Completion(
            message=message,
            usage=chat_usage(stream.usage),
            finish_reason=stream.finish or ("tool_calls" if tool_calls else "stop"),
            model=stream.model or self.model,
            response_id=stream.response_id,
        )


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content or None
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) or None
    return None


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def _same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _keep_reused_prefix(cache: list[tuple[Message, str, Any]], messages: Sequence[Message]) -> int:
    """Drop the cache entries after the longest prefix still holding the same message objects;
    return how many were kept."""
    keep = 0
    limit = min(len(cache), len(messages))
    while keep < limit and cache[keep][0] is messages[keep]:
        keep += 1
    del cache[keep:]
    return keep
