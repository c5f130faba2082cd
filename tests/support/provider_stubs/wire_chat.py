"""OpenAI Chat Completions answers (whole and streamed) built from a scripted reply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .replies import StubReply, pieces, reply_calls, reply_usage


def _chat_usage(u: dict[str, Any]) -> dict[str, Any]:
    prompt = u["input"] + u["cache_read"] + u["cache_write"]
    details: dict[str, Any] = {"cached_tokens": u["cache_read"], "audio_tokens": 0}
    if u["cache_write"]:
        details["cache_write_tokens"] = u["cache_write"]
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": u["output"],
        "total_tokens": prompt + u["output"],
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    if u["cost"] is not None:
        usage["cost"] = u["cost"]
    return usage


def _chat_finish(reply: StubReply, calls: list[dict[str, Any]]) -> str:
    if reply.get("finish") == "length":
        return "length"
    return "tool_calls" if calls else "stop"


def chat_complete(reply: StubReply, body: dict[str, Any], reply_no: int) -> dict[str, Any]:
    calls = reply_calls(reply, reply_no, "call_")
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text"), "refusal": None}
    if reply.get("reasoning"):  # OpenRouter / Ollama style reasoning text
        message["reasoning"] = reply["reasoning"].get("summary", "")
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ]
    return {
        "id": f"chatcmpl-stub{reply_no}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model"),
        "system_fingerprint": "fp_stub",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": _chat_finish(reply, calls)}
        ],
        "usage": _chat_usage(reply_usage(reply)),
    }


def chat_stream(reply: StubReply, body: dict[str, Any], reply_no: int) -> Iterator[tuple[str | None, str]]:
    calls = reply_calls(reply, reply_no, "call_")
    base = {
        "id": f"chatcmpl-stub{reply_no}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": body.get("model"),
        "system_fingerprint": "fp_stub",
    }
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        payload = dict(
            base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        if include_usage:
            payload["usage"] = None
        return None, json.dumps(payload)

    yield chunk({"role": "assistant", "content": ""})
    if reply.get("reasoning"):
        for piece in pieces(reply["reasoning"].get("summary", ""), 2):
            yield chunk({"reasoning": piece})
    if reply.get("text"):
        for piece in pieces(reply["text"], 3):
            yield chunk({"content": piece})
    split = int(reply.get("split", 3))
    for index, call in enumerate(calls):
        fragments = pieces(call["arguments"], split)
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["name"]}}
        if split <= 1:
            head["function"]["arguments"] = call["arguments"]
            yield chunk({"tool_calls": [head]})
            continue
        head["function"]["arguments"] = ""
        yield chunk({"tool_calls": [head]})
        for fragment in fragments:
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
    yield chunk({}, _chat_finish(reply, calls))
    mode = reply.get("usage_chunk", "empty")
    if include_usage and mode != "none":
        payload = dict(base, usage=_chat_usage(reply_usage(reply)))
        if mode == "empty":
            payload["choices"] = []
        elif mode == "null":
            payload["choices"] = None
        yield None, json.dumps(payload)
    yield None, "[DONE]"
