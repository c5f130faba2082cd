"""A local HTTP server that speaks the Ollama, OpenAI and Anthropic embedding and generation APIs."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def stub_vector(text: str, dim: int = 16) -> list[float]:
    """A deterministic vector per text, identical in every process."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [((digest[i % len(digest)] / 255.0) - 0.5) for i in range(dim)]


@dataclass
class EmbeddingProviderStub:
    """State of the local embedding/summary provider server: what it answers and what it received."""

    base_url: str = ""
    dim: int = 16
    fail_embeddings: bool = False
    tags_status: int = 200
    summary: str | None = "Consolidated summary of the weak facts"
    generate_answer: str | None = None
    requests: list[tuple[str, str, Any]] = field(default_factory=list)

    def paths(self, method: str) -> list[str]:
        return [p for m, p, _ in self.requests if m == method]


def _handler_for(state: EmbeddingProviderStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, payload: Any) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            state.requests.append(("GET", self.path, None))
            if self.path == "/api/tags":
                self._reply(state.tags_status, {"models": [{"name": "nomic-embed-text"}]})
            else:
                self._reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append(("POST", self.path, body))
            answer = (
                json.dumps({"summary": state.summary})
                if state.generate_answer is None
                else state.generate_answer
            )
            if self.path in ("/api/embed", "/v1/embeddings"):
                if state.fail_embeddings:
                    self._reply(503, {"error": "model is loading"})
                    return
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = [stub_vector(t, state.dim) for t in texts]
                if self.path == "/api/embed":
                    self._reply(200, {"model": body.get("model"), "embeddings": vectors})
                else:
                    if self.headers.get("Authorization") != "Bearer test-key":
                        self._reply(401, {"error": {"message": "bad key"}})
                        return
                    self._reply(200, {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]})
            elif self.path == "/api/generate":
                self._reply(200, {"response": answer, "done": True})
            elif self.path == "/v1/chat/completions":
                self._reply(200, {"choices": [{"message": {"role": "assistant", "content": answer}}]})
            elif self.path == "/v1/messages":
                self._reply(200, {"content": [{"type": "text", "text": answer}]})
            else:
                self._reply(404, {"error": "not found"})

    return Handler


class EmbeddingServer:
    """Runs an :class:`EmbeddingProviderStub` on 127.0.0.1 in a daemon thread while the context is open."""

    def __init__(self) -> None:
        self.state = EmbeddingProviderStub()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self.state))
        self.state.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> EmbeddingProviderStub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self.state

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
