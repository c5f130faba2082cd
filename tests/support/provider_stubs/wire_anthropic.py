"""Anthropic Messages answers (whole and streamed) built from a scripted reply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .replies import StubReply, pieces, reply_calls, reply_usage


def _anthropic_blocks(reply: StubReply, reply_no: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.get("thinking"):
        blocks.append({"type": "thinking", **reply["thinking"]})
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    for call in reply_calls(reply, reply_no, "toolu_"):
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["name"],
                "input": json.loads(call["arguments"]),
            }
        )
    return blocks


def _anthropic_stop(reply: StubReply) -> str:
    if reply.get("finish") == "length":
        return "max_tokens"
    return "tool_use" if reply.get("tool_calls") else "end_turn"


def _anthropic_usage(u: dict[str, Any], output: int) -> dict[str, Any]:
    return {
        "input_tokens": u["input"],
        "cache_creation_input_tokens": u["cache_write"],
        "cache_read_input_tokens": u["cache_read"],
        "output_tokens": output,
    }


def anthropic_complete(reply: StubReply, body: dict[str, Any], reply_no: int) -> dict[str, Any]:
    return {
        "id": f"msg_stub{reply_no}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": _anthropic_blocks(reply, reply_no),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": _anthropic_usage(reply_usage(reply), reply_usage(reply)["output"]),
    }


def anthropic_stream(
    reply: StubReply, body: dict[str, Any], reply_no: int
) -> Iterator[tuple[str | None, str]]:
    u = reply_usage(reply)
    start = anthropic_complete(reply, body, reply_no)
    start.update(content=[], stop_reason=None, usage=_anthropic_usage(u, 1))

    def ev(name: str, payload: dict[str, Any]) -> tuple[str, str]:
        return name, json.dumps({"type": name, **payload})

    yield ev("message_start", {"message": start})
    if reply.get("comments", True):
        yield ev("ping", {})
    split = int(reply.get("split", 3))
    for index, block in enumerate(_anthropic_blocks(reply, reply_no)):
        kind = block["type"]
        if kind == "thinking":
            yield ev(
                "content_block_start", {"index": index, "content_block": {"type": "thinking", "thinking": ""}}
            )
            for piece in pieces(block["thinking"], 2):
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
                )
            delta = {"type": "signature_delta", "signature": block["signature"]}
            yield ev("content_block_delta", {"index": index, "delta": delta})
        elif kind == "text":
            yield ev("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for piece in pieces(block["text"], 3):
                yield ev(
                    "content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}}
                )
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield ev("content_block_start", {"index": index, "content_block": head})
            args = json.dumps(block["input"]) if block["input"] else ""
            for piece in pieces(args, split) if args else []:
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield ev("content_block_delta", {"index": index, "delta": delta})
        yield ev("content_block_stop", {"index": index})
    delta = {"stop_reason": _anthropic_stop(reply), "stop_sequence": None}
    yield ev("message_delta", {"delta": delta, "usage": {"output_tokens": u["output"]}})
    yield ev("message_stop", {})
