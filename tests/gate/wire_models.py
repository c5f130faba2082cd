"""A scripted model on 127.0.0.1 that speaks each gate client's wire API and records every request.

One HTTP server answers four dialects, chosen by the request path: the Anthropic Messages API with SSE
and ``count_tokens`` (Claude Code), the OpenAI Responses API with namespaced function calls (Codex), the
Gemini ``streamGenerateContent`` / ``generateContent`` / ``countTokens`` API (Gemini CLI) and OpenAI chat
completions (Qwen Code). The reply depends only on how many tool calls the conversation already holds, so
the model is stateless and client retries are harmless; a request that offers no tools (titles, summaries,
next-speaker checks) gets a text answer. Past the last scripted step the model answers with plain text,
which ends the client's turn. Every request is kept, in arrival order, with its path.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "gate session finished"
USAGE_CHAT = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass(frozen=True)
class Step:
    """One model turn: call ``name`` (the client's name for it, maybe in ``namespace``) with ``arguments``."""

    name: str
    arguments: dict[str, Any]
    namespace: str | None = None
    call_id: str = "call_0"

    @staticmethod
    def from_json(data: dict[str, Any]) -> Step:
        """The step encoded by :meth:`to_json`."""
        return Step(data["name"], data["arguments"], data.get("namespace"), data.get("call_id", "call_0"))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (the sandbox receives its script as a file)."""
        return {
            "name": self.name,
            "arguments": self.arguments,
            "namespace": self.namespace,
            "call_id": self.call_id,
        }


@dataclass
class ScriptedModel:
    """The script and every request received."""

    steps: list[Step]
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, path: str, body: Any) -> None:
        with self.lock:
            self.requests.append({"path": path, "time": time.time(), "body": body})

    def step_for(self, turn: int, offers_tools: bool) -> Step | None:
        """The scripted call for ``turn``, or None when the model should answer with text."""
        if not offers_tools or turn >= len(self.steps):
            return None
        return self.steps[turn]


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    parts = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        parts.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(parts).encode()


# --- Anthropic Messages (Claude Code) -----------------------------------------------------------------


def anthropic_reply(model: ScriptedModel, body: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """A non-streamed message and the SSE stream that says the same."""
    turn = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
    step = model.step_for(turn, bool(body.get("tools")))
    usage = {"input_tokens": 10, "output_tokens": 5}
    if step is None:
        block: dict[str, Any] = {"type": "text", "text": FINAL_TEXT}
        start_block: dict[str, Any] = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": FINAL_TEXT}
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": step.call_id, "name": step.name, "input": step.arguments}
        start_block = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(step.arguments)}
        stop = "tool_use"
    message = {"id": f"msg_{turn}", "type": "message", "role": "assistant", "model": body.get("model", "m")}
    full = {**message, "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    stream = _sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start_block},
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": usage,
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    return full, stream


# --- OpenAI Responses (Codex) -------------------------------------------------------------------------


def responses_reply(model: ScriptedModel, body: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """A Responses object and its SSE stream: one function call (with namespace) or one message."""
    raw = body.get("input")
    items: list[Any] = raw if isinstance(raw, list) else []
    turn = sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call")
    step = model.step_for(turn, bool(body.get("tools")))
    if step is None:
        content = [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]
        item: dict[str, Any] = {"type": "message", "id": f"msg_{turn}", "role": "assistant"}
        item.update(content=content, status="completed")
    else:
        item = {"type": "function_call", "id": f"fc_{turn}", "call_id": step.call_id, "name": step.name}
        if step.namespace:
            item["namespace"] = step.namespace
        item.update(arguments=json.dumps(step.arguments), status="completed")
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    response = {"id": f"resp_{turn}", "object": "response", "created_at": int(time.time())}
    response.update(model=body.get("model", "m"), status="completed", output=[item], usage=usage)
    stream = _sse(
        [
            ("response.created", {"type": "response.created", "response": {**response, "output": []}}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "response": response}),
        ]
    )
    return response, stream


# --- Gemini generateContent (Gemini CLI) --------------------------------------------------------------


def gemini_reply(model: ScriptedModel, body: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """A GenerateContentResponse and its SSE stream (``alt=sse``)."""
    contents = body.get("contents") or []
    turn = sum(
        1
        for content in contents
        if content.get("role") == "model" and any("functionCall" in p for p in content.get("parts") or [])
    )
    offers = any(tool.get("functionDeclarations") for tool in body.get("tools") or [])
    step = model.step_for(turn, offers)
    config = body.get("generationConfig") or {}
    if step is not None:
        part: dict[str, Any] = {"functionCall": {"name": step.name, "args": step.arguments}}
    elif config.get("responseMimeType") == "application/json":
        part = {"text": json.dumps({"reasoning": FINAL_TEXT, "next_speaker": "user"})}
    else:
        part = {"text": FINAL_TEXT}
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
    response = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gate-model"}
    return response, _sse([(None, response)])


# --- OpenAI chat completions (Qwen Code) --------------------------------------------------------------


def chat_reply(model: ScriptedModel, body: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """A chat completion and its chunk stream: one tool call or one text answer."""
    messages = body.get("messages") or []
    turn = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    step = model.step_for(turn, bool(body.get("tools")))
    base = {"id": f"chatcmpl-{turn}", "created": int(time.time()), "model": body.get("model", "m")}
    message: dict[str, Any] = {"role": "assistant", "content": FINAL_TEXT if step is None else ""}
    finish = "stop"
    chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if step is not None:
        call: dict[str, Any] = {"id": step.call_id, "type": "function"}
        call["function"] = {"name": step.name, "arguments": json.dumps(step.arguments)}
        message["tool_calls"] = [call]
        chunks.append({"tool_calls": [{"index": 0, **call}]})
        finish = "tool_calls"
    else:
        chunks.append({"content": FINAL_TEXT})
    events: list[tuple[str | None, dict[str, Any]]] = []
    for delta in chunks:
        choice = {"index": 0, "delta": delta, "finish_reason": None}
        events.append((None, {**base, "object": "chat.completion.chunk", "choices": [choice]}))
    last = {"index": 0, "delta": {}, "finish_reason": finish}
    events.append((None, {**base, "object": "chat.completion.chunk", "choices": [last]}))
    events.append((None, {**base, "object": "chat.completion.chunk", "choices": [], "usage": USAGE_CHAT}))
    stream = _sse(events) + b"data: [DONE]\n\n"
    full = {**base, "object": "chat.completion", "usage": USAGE_CHAT}
    full["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return full, stream


def _route(path: str) -> str:
    clean = path.split("?", 1)[0].rstrip("/")
    if clean.endswith("/messages/count_tokens"):
        return "count_tokens"
    if clean.endswith(":countTokens"):
        return "gemini_count"
    for suffix, kind in (
        ("/messages", "anthropic"),
        ("/responses", "responses"),
        (":streamGenerateContent", "gemini"),
        (":generateContent", "gemini"),
        ("/chat/completions", "chat"),
    ):
        if clean.endswith(suffix):
            return kind
    return "unknown"


REPLIES = {
    "anthropic": anthropic_reply,
    "responses": responses_reply,
    "gemini": gemini_reply,
    "chat": chat_reply,
}


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            model.record(self.path, None)
            models = [{"id": "gate-model", "object": "model", "created": 0, "owned_by": "gate"}]
            self._send(json.dumps({"object": "list", "data": models}).encode(), "application/json")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw[:200].decode("utf-8", "replace")}
            model.record(self.path, body)
            kind = _route(self.path)
            if kind == "count_tokens":
                self._send(b'{"input_tokens": 10}', "application/json")
                return
            if kind == "gemini_count":
                self._send(b'{"totalTokens": 10}', "application/json")
                return
            if kind == "unknown" or not isinstance(body, dict):
                self._send(b'{"error": {"message": "not found"}}', "application/json", 404)
                return
            full, stream = REPLIES[kind](model, body)
            streamed = bool(body.get("stream")) or "streamGenerateContent" in self.path
            if streamed:
                self._send(stream, "text/event-stream")
            else:
                self._send(json.dumps(full).encode(), "application/json")

        def _send(self, data: bytes, content_type: str, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            if content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(data)

    return Handler


class ModelServer:
    """Serve a :class:`ScriptedModel` on 127.0.0.1:``port`` (0: ephemeral) in a background thread."""

    def __init__(self, model: ScriptedModel, port: int = 0) -> None:
        self.model = model
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(model))
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-model", daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
