"""Local HTTP stand-ins for the model providers tinyagent talks to (loopback only, stdlib only).

One server speaks all three wire formats, chosen by the request path:

    POST …/chat/completions   OpenAI Chat Completions (OpenAI, OpenRouter, Ollama /v1)
    POST …/messages           Anthropic Messages
    POST …/responses          OpenAI Responses (Codex)

Each request consumes the next entry of a script of replies. The answer is streamed (SSE) when the
request body says `"stream": true`, otherwise it is one JSON document. Every request is recorded
(path, lower-cased headers, parsed body). By default the server also checks the request the way the
real provider does (tool-call/result pairing per assistant turn, Anthropic alternation and id
pattern, required fields) and answers 400 with the provider's own error text when it is violated.

A reply is a dict (all keys optional):

    text          assistant text
    tool_calls    [{"name": "bash", "arguments": {...} | "raw json", "id": "call_x"}]
    thinking      {"thinking": "...", "signature": "..."}   (Anthropic thinking block)
    reasoning     {"summary": "...", "encrypted_content": "..."}   (Responses reasoning item; on
                  Chat Completions the summary becomes the message's `reasoning` text)
    usage         {"input": 100, "output": 10, "cache_read": 0, "cache_write": 0, "cost": 0.0012}
                  (input = fresh tokens; the wire fields are derived per provider; cost only on chat)
    finish        "stop" | "length" (Responses: "length" -> status incomplete)
    delay         seconds to sleep before answering
    fault         "429" | "500" | "503" | "malformed" | "drop" | "drop_mid_stream" | "stream_error"
                  | "truncate" (stream ends cleanly but early, without its terminator)
                  | "status" (answer `status` with `error` body)
    fault_at      streamed faults (drop_mid_stream, truncate, malformed, stream_error) happen before
                  this event number (default 2: after the first two events, before any text)
    retry_after   Retry-After header value for a 429/503
    status, error HTTP status and error JSON for fault "status" (e.g. 404 model_not_found)
    split         streamed tool-call argument fragments per call (default 3; 1 = whole, Ollama style)
    usage_chunk   Chat streaming: "empty" (choices: []), "null" (choices: null), "absent" (no choices
                  key) or "none" (no usage chunk even when asked); default "empty"
    ignore_stream answer with one JSON document even when the request asked for a stream
    linger        seconds to keep a stream's body open after its terminator event
    crlf          use CRLF line endings in the SSE stream
    comments      interleave SSE comment lines / Anthropic pings (default True)

Use in tests (threaded server, usable from subprocesses too because it listens on 127.0.0.1):

    with ProviderStub([{"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
                       {"text": "done"}]) as stub:
        provider = get_provider("openai", model="m", base_url=stub.base_url("openai"), api_key="k")
        ...
        stub.requests[0].body["messages"]

Standalone (for CLI or benchmark subprocesses):

    python tests/support/provider_stubs.py --script replies.json [--port 0] [--record requests.jsonl]

prints one JSON line `{"url": "http://127.0.0.1:PORT"}` on stdout once it listens, then serves until
killed. `replies.json` is a list of replies or {"replies": [...], "loop": true}. `StubProcess` wraps
this for tests and benchmarks; each record carries `received_at` / `responded_at` (time.time()).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ProviderStub", "RecordedRequest", "StubProcess", "StubReply", "base_url_for"]

StubReply = dict[str, Any]

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


@dataclass
class RecordedRequest:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON
    wire: str  # "chat" | "anthropic" | "responses" | "unknown"
    stream: bool = False
    client_port: int = 0  # the client's TCP port: equal ports mean a reused keep-alive connection
    received_at: float = 0.0  # time.time() when the request body had been read
    responded_at: float | None = None  # time.time() when the answer was fully written (or dropped)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "body": self.body,
            "wire": self.wire,
            "stream": self.stream,
            "client_port": self.client_port,
            "received_at": self.received_at,
            "responded_at": self.responded_at,
        }


def base_url_for(root: str, provider: str) -> str:
    """The base URL a provider client expects for a server rooted at `root` (no trailing slash).

    OpenAI-style clients take a base that already ends in /v1; Anthropic takes the host, and so
    does Ollama (like OLLAMA_HOST: tinyagent appends /v1 to a bare Ollama host).
    """
    if provider in ("anthropic", "ollama"):
        return root
    return root + "/v1"


class _Script:
    """A thread-safe queue of replies; optionally cycles."""

    def __init__(self, replies: Iterable[StubReply], loop: bool) -> None:
        self._replies = [dict(r) for r in replies]
        self._loop = loop
        self._next = 0
        self._lock = threading.Lock()

    def take(self) -> StubReply | None:
        with self._lock:
            if self._next >= len(self._replies):
                if not self._loop or not self._replies:
                    return None
                self._next = 0
            reply = self._replies[self._next]
            self._next += 1
            return reply

    def extend(self, replies: Iterable[StubReply]) -> None:
        with self._lock:
            self._replies.extend(dict(r) for r in replies)

    @property
    def consumed(self) -> int:
        with self._lock:
            return self._next


class ProviderStub:
    """A scripted fake provider on 127.0.0.1 (all three wire formats), run in a daemon thread."""

    def __init__(
        self,
        replies: Iterable[StubReply] = (),
        *,
        loop: bool = False,
        validate: bool = True,
        port: int = 0,
        record_path: str | None = None,
    ) -> None:
        self.script = _Script(replies, loop)
        self.validate = validate
        self.requests: list[RecordedRequest] = []
        self._record_path = record_path
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.stub = self
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Root URL, e.g. http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, provider: str) -> str:
        """Base URL to hand to tinyagent for `provider` (openai/openrouter/codex get /v1)."""
        return base_url_for(self.url, provider)

    def start(self) -> ProviderStub:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="provider-stub",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ProviderStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # scripting and records -------------------------------------------------------------------
    def add(self, *replies: StubReply) -> None:
        """Append replies to the script."""
        self.script.extend(replies)

    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _finish(self, request: RecordedRequest) -> None:
        request.responded_at = time.time()
        if self._record_path:
            with self._lock, open(self._record_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(request.to_json()) + "\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    stub: ProviderStub

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients closing pooled keep-alive connections is normal; report anything else."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Dropped(Exception):
    """Raised to abandon a connection without a complete response."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle + delayed ACK would
    # add ~40 ms to every non-streamed answer (real providers set it too).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    # plumbing --------------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._send_json(404, {"error": {"message": "not found", "type": "not_found_error"}})

    def do_POST(self) -> None:
        stub = self.server.stub
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length).decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        wire = _wire_for(self.path)
        stream = isinstance(body, dict) and body.get("stream") is True
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest(
            "POST", self.path, headers, body, wire, stream, int(self.client_address[1]), time.time()
        )
        stub._record(record)
        try:
            self._answer(stub, wire, body, stream)
        except (_Dropped, BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        finally:
            stub._finish(record)

    def _answer(self, stub: ProviderStub, wire: str, body: Any, stream: bool) -> None:
        if wire == "unknown":
            self._send_json(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
            return
        if not isinstance(body, dict):
            self._send_error(wire, 400, "request body is not a JSON object", "invalid_request_error")
            return
        if stub.validate:
            problem = _VALIDATORS[wire](body, {k.lower(): v for k, v in self.headers.items()})
            if problem:
                self._send_error(wire, 400, problem, "invalid_request_error")
                return
        reply = stub.script.take()
        if reply is None:
            self._send_error(wire, 400, "provider stub: script exhausted", "invalid_request_error")
            return
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        fault = reply.get("fault")
        if fault in ("429", "500", "502", "503"):
            extra = {"Retry-After": str(reply["retry_after"])} if "retry_after" in reply else {}
            kind = "rate_limit_error" if fault == "429" else "api_error"
            self._send_error(wire, int(fault), f"stub fault {fault}", kind, extra)
            return
        if fault == "status":
            self._send_json(int(reply.get("status", 400)), reply.get("error") or {"error": {"message": "x"}})
            return
        if fault == "drop":
            raise _Dropped
        if fault == "malformed" and not stream:
            self._send_raw(200, b'{"id": "broken", "choices": [', "application/json")
            return
        reply_no = stub.script.consumed
        if stream and not reply.get("ignore_stream"):
            events = _STREAMERS[wire](reply, body, reply_no)
            self._send_stream(events, reply)
        else:
            self._send_json(200, _BUILDERS[wire](reply, body, reply_no))

    def _send_raw(self, status: int, data: bytes, ctype: str, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", extra)

    def _send_error(
        self, wire: str, status: int, message: str, kind: str, extra: Mapping[str, str] | None = None
    ) -> None:
        if wire == "anthropic":
            payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        self._send_json(status, payload, extra)

    def _send_stream(self, events: Iterator[tuple[str | None, str]], reply: StubReply) -> None:
        """Write SSE events with chunked transfer encoding, so a drop is detectable by the client."""
        nl = "\r\n" if reply.get("crlf") else "\n"
        comments = reply.get("comments", True)
        fault = reply.get("fault")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if comments:
            self._chunk(f": stub keep-alive{nl}{nl}")
        fault_at = int(reply.get("fault_at", 2))
        for sent, (name, data) in enumerate(events):
            if fault == "drop_mid_stream" and sent == fault_at:
                self.wfile.flush()
                raise _Dropped
            if fault == "truncate" and sent == fault_at:
                break  # a clean end of body without the stream's terminator event
            if fault == "malformed" and sent == fault_at:
                self._chunk(f"data: {{not json{nl}{nl}")
            if fault == "stream_error" and sent == fault_at:
                err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                self._chunk(f"event: error{nl}data: {json.dumps(err)}{nl}{nl}")
                break
            text = ""
            if name is not None:
                text += f"event: {name}{nl}"
            lines = data.split("\n")
            text += "".join(f"data: {line}{nl}" for line in lines) + nl
            self._chunk(text)
        if reply.get("linger"):
            time.sleep(float(reply["linger"]))  # the terminator was sent; hold the body open
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _wire_for(path: str) -> str:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    return "unknown"


# ---------------------------------------------------------------------------------------------
# request validation (what the real providers reject)


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _validate_chat(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
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


def _validate_anthropic(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
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
            previous_tool_uses = []
        else:
            uses = []
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
                        return (
                            f"messages.{i}.content: tool_use.id: String should match pattern "
                            "'^[a-zA-Z0-9_-]+$'"
                        )
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


def _validate_responses(body: dict[str, Any], headers: Mapping[str, str]) -> str | None:
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


_VALIDATORS = {"chat": _validate_chat, "anthropic": _validate_anthropic, "responses": _validate_responses}


# ---------------------------------------------------------------------------------------------
# reply construction


def _usage(reply: StubReply) -> dict[str, Any]:
    u = dict(reply.get("usage") or {})
    return {
        "input": int(u.get("input", 100)),
        "output": int(u.get("output", 10)),
        "cache_read": int(u.get("cache_read", 0)),
        "cache_write": int(u.get("cache_write", 0)),
        "cost": u.get("cost"),
    }


def _calls(reply: StubReply, reply_no: int, prefix: str) -> list[dict[str, Any]]:
    out = []
    for i, call in enumerate(reply.get("tool_calls") or []):
        args = call.get("arguments", {})
        out.append(
            {
                "id": call.get("id") or f"{prefix}{reply_no}_{i}",
                "name": call["name"],
                "arguments": args if isinstance(args, str) else json.dumps(args),
            }
        )
    return out


def _pieces(text: str, n: int) -> list[str]:
    """Split text into up to n non-empty fragments (at least one, possibly empty)."""
    if n <= 1 or len(text) <= 1:
        return [text]
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)]


# Chat Completions ---------------------------------------------------------------------------


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


def _chat_complete(reply: StubReply, body: dict[str, Any], reply_no: int) -> dict[str, Any]:
    calls = _calls(reply, reply_no, "call_")
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
        "usage": _chat_usage(_usage(reply)),
    }


def _chat_stream(reply: StubReply, body: dict[str, Any], reply_no: int) -> Iterator[tuple[str | None, str]]:
    calls = _calls(reply, reply_no, "call_")
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
        for piece in _pieces(reply["reasoning"].get("summary", ""), 2):
            yield chunk({"reasoning": piece})
    if reply.get("text"):
        for piece in _pieces(reply["text"], 3):
            yield chunk({"content": piece})
    split = int(reply.get("split", 3))
    for index, call in enumerate(calls):
        fragments = _pieces(call["arguments"], split)
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
        payload = dict(base, usage=_chat_usage(_usage(reply)))
        if mode == "empty":
            payload["choices"] = []
        elif mode == "null":
            payload["choices"] = None
        yield None, json.dumps(payload)
    yield None, "[DONE]"


# Anthropic Messages -------------------------------------------------------------------------


def _anthropic_blocks(reply: StubReply, reply_no: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.get("thinking"):
        blocks.append({"type": "thinking", **reply["thinking"]})
    if reply.get("text"):
        blocks.append({"type": "text", "text": reply["text"]})
    for call in _calls(reply, reply_no, "toolu_"):
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


def _anthropic_complete(reply: StubReply, body: dict[str, Any], reply_no: int) -> dict[str, Any]:
    return {
        "id": f"msg_stub{reply_no}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": _anthropic_blocks(reply, reply_no),
        "stop_reason": _anthropic_stop(reply),
        "stop_sequence": None,
        "usage": _anthropic_usage(_usage(reply), _usage(reply)["output"]),
    }


def _anthropic_stream(
    reply: StubReply, body: dict[str, Any], reply_no: int
) -> Iterator[tuple[str | None, str]]:
    u = _usage(reply)
    start = _anthropic_complete(reply, body, reply_no)
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
            for piece in _pieces(block["thinking"], 2):
                yield ev(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}},
                )
            delta = {"type": "signature_delta", "signature": block["signature"]}
            yield ev("content_block_delta", {"index": index, "delta": delta})
        elif kind == "text":
            yield ev("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for piece in _pieces(block["text"], 3):
                yield ev(
                    "content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}}
                )
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield ev("content_block_start", {"index": index, "content_block": head})
            args = json.dumps(block["input"]) if block["input"] else ""
            for piece in _pieces(args, split) if args else []:
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield ev("content_block_delta", {"index": index, "delta": delta})
        yield ev("content_block_stop", {"index": index})
    delta = {"stop_reason": _anthropic_stop(reply), "stop_sequence": None}
    yield ev("message_delta", {"delta": delta, "usage": {"output_tokens": u["output"]}})
    yield ev("message_stop", {})


# Responses ----------------------------------------------------------------------------------


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
    for i, call in enumerate(_calls(reply, reply_no, "call_")):
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


def _responses_complete(reply: StubReply, body: dict[str, Any], reply_no: int) -> dict[str, Any]:
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
        "usage": _responses_usage(_usage(reply)),
    }


def _responses_stream(
    reply: StubReply, body: dict[str, Any], reply_no: int
) -> Iterator[tuple[str | None, str]]:
    final = _responses_complete(reply, body, reply_no)
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
            for piece in _pieces(text, 3):
                yield ev("response.output_text.delta", {**ids, "delta": piece})
            yield ev("response.output_text.done", {**ids, "text": text})
            yield ev("response.content_part.done", {**ids, "part": dict(part, text=text)})
        elif kind == "function_call":
            yield ev("response.output_item.added", {"output_index": index, "item": dict(item, arguments="")})
            ids = {"item_id": item["id"], "output_index": index}
            for piece in _pieces(item["arguments"], split):
                yield ev("response.function_call_arguments.delta", {**ids, "delta": piece})
            yield ev("response.function_call_arguments.done", {**ids, "arguments": item["arguments"]})
        else:
            yield ev("response.output_item.added", {"output_index": index, "item": item})
        yield ev("response.output_item.done", {"output_index": index, "item": item})
    terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield ev(terminal, {"response": final})


_BUILDERS = {"chat": _chat_complete, "anthropic": _anthropic_complete, "responses": _responses_complete}
_STREAMERS = {"chat": _chat_stream, "anthropic": _anthropic_stream, "responses": _responses_stream}


# ---------------------------------------------------------------------------------------------
# standalone process


class StubProcess:
    """The stub as a separate process (for benchmarks, or when the test process must stay idle).

    `with StubProcess(replies, workdir=tmp_path) as proc:` gives `proc.url`, `proc.base_url(provider)`
    and `proc.requests()` (the recorded requests, read back from the process's record file).
    """

    def __init__(
        self, replies: Iterable[StubReply], *, workdir: str | os.PathLike[str], loop: bool = False
    ) -> None:
        self._dir = os.fspath(workdir)
        self._replies = list(replies)
        self._loop = loop
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.record_path = os.path.join(self._dir, f"stub-requests-{id(self)}.jsonl")

    def base_url(self, provider: str) -> str:
        return base_url_for(self.url, provider)

    def __enter__(self) -> StubProcess:
        script = os.path.join(self._dir, f"stub-script-{id(self)}.json")
        with open(script, "w", encoding="utf-8") as fh:
            json.dump({"replies": self._replies, "loop": self._loop}, fh)
        cmd = [sys.executable, os.path.abspath(__file__), "--script", script, "--record", self.record_path]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait(timeout=10)
            raise RuntimeError("provider stub process failed to start")
        self.url = json.loads(line)["url"]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()

    def requests(self, expected: int = 0, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Recorded requests (each written once its answer is complete); wait for `expected` of them."""
        deadline = time.monotonic() + timeout
        while True:
            records: list[dict[str, Any]] = []
            if os.path.exists(self.record_path):
                with open(self.record_path, encoding="utf-8") as fh:
                    records = [json.loads(line) for line in fh if line.endswith("\n")]
            if len(records) >= expected or time.monotonic() > deadline:
                return records
            time.sleep(0.01)


def _load_script(path: str) -> tuple[list[StubReply], bool]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, list):
        return data, False
    return list(data.get("replies", [])), bool(data.get("loop", False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Scripted fake model provider on 127.0.0.1.")
    parser.add_argument("--script", required=True, help="JSON file: a list of replies or {replies, loop}")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0 = any free port)")
    parser.add_argument("--record", help="append every request as a JSON line to this file")
    parser.add_argument("--no-validate", action="store_true", help="accept requests real providers reject")
    args = parser.parse_args(argv)
    replies, loop = _load_script(args.script)
    stub = ProviderStub(
        replies, loop=loop, validate=not args.no_validate, port=args.port, record_path=args.record
    )
    print(json.dumps({"url": stub.url}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        stub._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stub._server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
