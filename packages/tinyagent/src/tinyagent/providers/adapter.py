"""Shared plumbing of the HTTP provider adapters: one `HttpClient`, `close()`, and `complete()`.

An adapter subclasses `HttpAdapter`, sets `name`, `model` and `url`, calls `_open_http(...)` in its
constructor, and implements the wire-specific parts: `request_payload` (the body to send, defaults to
`build_request`), `_parse` (a whole JSON response -> Completion) and `_consume` (an SSE stream ->
Completion).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from tinyagent.providers.http.client import HttpClient
from tinyagent.providers.http.retry import RetryPolicy, StreamProgress
from tinyagent.providers.sse import SSEEvent
from tinyagent.types import Completion, Message, ToolSpec


class HttpAdapter(ABC):
    """Base of the Chat Completions, Anthropic Messages and Responses adapters."""

    name: str
    model: str
    url: str
    _http: HttpClient

    def _open_http(
        self,
        *,
        headers: dict[str, str],
        timeout: float,
        retry: RetryPolicy | None,
        max_retries: int,
        key_hint: str | None,
        api_key: str | None,
        sleep: Callable[[float], None],
    ) -> None:
        self._http = HttpClient(
            provider=self.name,
            headers=headers,
            timeout=timeout,
            retry=retry or RetryPolicy(max_retries=max_retries),
            key_hint=key_hint,
            api_key=api_key,
            sleep=sleep,
        )

    def close(self) -> None:
        """Release the HTTP connection."""
        self._http.close()

    @abstractmethod
    def build_request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool
    ) -> dict[str, Any]:
        """The exact request body for this history in the adapter's wire format."""

    def request_payload(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool
    ) -> Mapping[str, Any] | bytes:
        """The body to send; adapters may return pre-encoded JSON (same content as `build_request`)."""
        return self.build_request(messages, tools, stream=stream)

    @abstractmethod
    def _parse(self, payload: Any) -> Completion:
        """A whole (non-streamed) JSON response -> Completion."""

    @abstractmethod
    def _consume(
        self,
        events: Iterator[SSEEvent],
        progress: StreamProgress,
        on_text: Callable[[str], None] | None,
    ) -> Completion:
        """An SSE stream -> Completion."""

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        stream: bool,
        on_text: Callable[[str], None] | None = None,
    ) -> Completion:
        """Send the conversation (streamed or not) and return the assistant's reply with usage."""
        body = self.request_payload(messages, tools, stream=stream)
        if not stream:
            return self._parse(self._http.post_json(self.url, body))

        def consume(events: Iterator[SSEEvent], progress: StreamProgress) -> Completion:
            return self._consume(events, progress, on_text)

        return self._http.post_sse(self.url, body, consume, on_json=self._parse)
