"""The stub's reply script, its request records and the reply fields every wire format shares."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

StubReply = dict[str, Any]


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


class ReplyScript:
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


def reply_usage(reply: StubReply) -> dict[str, Any]:
    u = dict(reply.get("usage") or {})
    return {
        "input": int(u.get("input", 100)),
        "output": int(u.get("output", 10)),
        "cache_read": int(u.get("cache_read", 0)),
        "cache_write": int(u.get("cache_write", 0)),
        "cost": u.get("cost"),
    }


def reply_calls(reply: StubReply, reply_no: int, prefix: str) -> list[dict[str, Any]]:
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


def pieces(text: str, n: int) -> list[str]:
    """Split text into up to n non-empty fragments (at least one, possibly empty)."""
    if n <= 1 or len(text) <= 1:
        return [text]
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)]
