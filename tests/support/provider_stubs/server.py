"""The threaded stub server: records each request, checks it, and answers from the script."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .replies import RecordedRequest, ReplyScript, StubReply, base_url_for
from .validation import VALIDATORS, wire_for
from .wire_anthropic import anthropic_complete, anthropic_stream
from .wire_chat import chat_complete, chat_stream
from .wire_responses import responses_complete, responses_stream

_BUILDERS = {"chat": chat_complete, "anthropic": anthropic_complete, "responses": responses_complete}
_STREAMERS = {"chat": chat_stream, "anthropic": anthropic_stream, "responses": responses_stream}


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
        self.script = ReplyScript(replies, loop)
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
        wire = wire_for(self.path)
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
            problem = VALIDATORS[wire](body, {k.lower(): v for k, v in self.headers.items()})
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
