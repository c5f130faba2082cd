"""A deterministic OpenAI-compatible chat model on 127.0.0.1 that drives a scripted list of tool calls.

The reply is chosen from the number of ``assistant`` messages already in the request, so the fixture is
stateless and client retries are harmless (real-clients.md §5.3). Past the last scripted step it answers
with plain text and ``finish_reason: "stop"``, which ends the OpenCode session. Every request body is kept
so a test can check which tool results the client fed back to the model.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "gate session finished"


@dataclass(frozen=True)
class ScriptedCall:
    """One model turn: call ``tool`` (the client-side name, ``<server>_<tool>``) with ``arguments``."""

    call_id: str
    tool: str
    arguments: dict[str, Any]


@dataclass
class FixtureModel:
    """The fixture's script and everything it received."""

    steps: list[ScriptedCall]
    model_id: str = "gate-model"
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply_chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The SSE chunks answering one streamed chat-completions request."""
        messages = body.get("messages") or []
        turn = sum(1 for message in messages if message.get("role") == "assistant")
        if not body.get("tools"):
            turn = len(self.steps)  # an auxiliary call (title etc.): answer with text
        base = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": int(time.time())}
        base["model"] = self.model_id

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        chunks = [chunk({"role": "assistant", "content": ""})]
        if turn < len(self.steps):
            step = self.steps[turn]
            call = {
                "index": 0,
                "id": step.call_id,
                "type": "function",
                "function": {"name": step.tool, "arguments": json.dumps(step.arguments)},
            }
            chunks += [chunk({"tool_calls": [call]}), chunk({}, "tool_calls")]
        else:
            chunks += [chunk({"content": FINAL_TEXT}), chunk({}, "stop")]
        chunks.append({**base, "choices": [], "usage": usage})
        return chunks


def _handler_for(model: FixtureModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json({"object": "list", "data": [{"id": model.model_id, "object": "model"}]})
            else:
                self._send_json({"error": {"message": "not found"}}, status=404)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send_json({"error": {"message": "not found"}}, status=404)
                return
            with model.lock:
                model.requests.append(body)
            chunks = model.reply_chunks(body)
            if not body.get("stream"):
                self._send_json(_collapse(chunks, model.model_id))
                return
            payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            data = payload.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_json(self, obj: Any, status: int = 200) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _collapse(chunks: list[dict[str, Any]], model_id: str) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` equivalent to the chunks."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    finish = "stop"
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            if "tool_calls" in delta:
                message["tool_calls"] = delta["tool_calls"]
            finish = choice.get("finish_reason") or finish
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return {
        "id": "chatcmpl-0",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_id,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


class FixtureServer:
    """Run a :class:`FixtureModel` on 127.0.0.1 (ephemeral port) in a background thread."""

    def __init__(self, model: FixtureModel) -> None:
        self.model = model
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(model))
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fixture-model", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FixtureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
