"""OpenAI Responses answers (whole and streamed) built from a scripted reply."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .replies import StubReply, pieces, reply_calls, reply_usage


def _responses_items(reply: StubReply, body: dict[str, Any], reply_no: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.get("reasoning"):
        r = reply["reasoning"]
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_stub{reply_no}",
            "summary": [{"type": "summary_text", "text": r.get("summary", "")}] if r.get("summary") else [],
        }
        if "reasoning.encrypted_content" in (body.get("include") or []):
            item["encrypted_content"] = r.get("encrypted_content", f"enc-{reply_no}")
        items.append(item)
    if reply.get("text"):
        items.append(
            {
                "type": "message",
                "id": f"msg_stub{reply_no}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply["text"], "annotations": []}],
            }
        )
    for i, call in enumerate(reply_calls(reply, reply_no, "call_")):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_stub{reply_no}_{i}",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": call["arguments"],
                "status": "completed",
            }
        )
    return items


def _responses_usage(u: dict[str, Any]) -> dict[str, Any]:
    prompt = u["input"] + u["cache_read"]
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": u["cache_read"]},
        "output_tokens": u["output"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + u["output"],
    }


def responses_complete(reply: StubReply, body: dict[str, Any], reply_no: int) -> dict[str, Any]:
    incomplete = reply.get("finish") == "length"
    return {
        "id": f"resp_stub{reply_no}",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": body.get("model"),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "output": _responses_items(reply, body, reply_no),
        "usage": _responses_usage(reply_usage(reply)),
    }


def responses_stream(
    reply: StubReply, body: dict[str, Any], reply_no: int
) -> Iterator[tuple[str | None, str]]:
    final = responses_complete(reply, body, reply_no)
    seq = 0

    def ev(name: str, payload: dict[str, Any]) -> tuple[str, str]:
        nonlocal seq
        seq += 1
        return name, json.dumps({"type": name, "sequence_number": seq, **payload})

    shell = dict(final, status="in_progress", output=[], usage=None, incomplete_details=None)
    yield ev("response.created", {"response": shell})
    yield ev("response.in_progress", {"response": shell})
    split = int(reply.get("split", 3))
    for index, item in enumerate(final["output"]):
        kind = item["type"]
        if kind == "message":
            text = item["content"][0]["text"]
            yield ev("response.output_item.added", {"output_index": index, "item": dict(item, content=[])})
            part = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield ev("response.content_part.added", {**ids, "part": part})
            for piece in pieces(text, 3):
                yield ev("response.output_text.delta", {**ids, "delta": piece})
            yield ev("response.output_text.done", {**ids, "text": text})
            yield ev("response.content_part.done", {**ids, "part": dict(part, text=text)})
        elif kind == "function_call":
            yield ev("response.output_item.added", {"output_index": index, "item": dict(item, arguments="")})
            ids = {"item_id": item["id"], "output_index": index}
            for piece in pieces(item["arguments"], split):
                yield ev("response.function_call_arguments.delta", {**ids, "delta": piece})
            yield ev("response.function_call_arguments.done", {**ids, "arguments": item["arguments"]})
        else:
            yield ev("response.output_item.added", {"output_index": index, "item": item})
        yield ev("response.output_item.done", {"output_index": index, "item": item})
    terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield ev(terminal, {"response": final})
