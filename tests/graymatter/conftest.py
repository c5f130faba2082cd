"""Fixtures for the graymatter engine tests: hermetic Memory instances, a CLI runner (real subprocesses)
and a local HTTP server on 127.0.0.1 that speaks the Ollama and OpenAI embedding/generation APIs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory

_PROVIDER_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "VOYAGE_API_KEY")


def hermetic_env(**extra: str) -> dict[str, str]:
    """The current environment without graymatter settings or provider keys, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAYMATTER_") and k not in _PROVIDER_VARS}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def gm_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def mem(gm_dir: Path) -> Iterator[Memory]:
    memory = Memory(gm_dir, config=MemoryConfig(), embedder=None, summariser=None)
    yield memory
    memory.close()


@pytest.fixture
def make_memory(tmp_path: Path) -> Iterator[Callable[..., Memory]]:
    opened: list[Memory] = []

    def factory(directory: Path | None = None, **kwargs: Any) -> Memory:
        kwargs.setdefault("config", MemoryConfig())
        kwargs.setdefault("embedder", None)
        kwargs.setdefault("summariser", None)
        memory = Memory(directory or tmp_path / "store", **kwargs)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


@pytest.fixture
def cli(gm_dir: Path) -> Callable[..., CliResult]:
    """Run ``python -m graymatter --dir <gm_dir> ARGS`` in a real subprocess."""

    def run(
        *args: str,
        stdin: str | None = None,
        use_dir: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> CliResult:
        command = [sys.executable, "-m", "graymatter"]
        if use_dir:
            command += ["--dir", str(gm_dir)]
        proc = subprocess.run(
            [*command, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or hermetic_env(),
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


def stub_vector(text: str, dim: int = 16) -> list[float]:
    """A deterministic vector per text, identical in every process."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [((digest[i % len(digest)] / 255.0) - 0.5) for i in range(dim)]


@dataclass
class ProviderStub:
    """State of the local provider server: what it answers and what it received."""

    base_url: str = ""
    dim: int = 16
    fail_embeddings: bool = False
    tags_status: int = 200
    summary: str | None = "Consolidated summary of the weak facts"
    generate_answer: str | None = None
    requests: list[tuple[str, str, Any]] = field(default_factory=list)

    def paths(self, method: str) -> list[str]:
        return [p for m, p, _ in self.requests if m == method]


@pytest.fixture
def provider_stub() -> Iterator[ProviderStub]:
    """A real HTTP server on 127.0.0.1 speaking Ollama (/api/tags, /api/embed, /api/generate),
    OpenAI (/v1/embeddings, /v1/chat/completions) and Anthropic (/v1/messages)."""
    state = ProviderStub()

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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def snapshot(directory: Path) -> dict[str, bytes]:
    """Bytes of every file under ``directory`` (for byte-identical checks)."""
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


@pytest.fixture
def snapshot_dir() -> Callable[[Path], dict[str, bytes]]:
    return snapshot
