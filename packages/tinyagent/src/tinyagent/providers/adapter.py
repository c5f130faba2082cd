"""Shared plumbing of the HTTP provider adapters: one `HttpClient`, `close()`, and `complete()`.

An adapter subclasses `HttpAdapter`, calls `super().__init__(name, model, url, headers, ...)` in its
constructor (passing on the `HttpOptions` keywords it accepts), and implements the wire-specific
parts: `_request_body` (the body for a history `build_request` has checked), `request_payload` (the
body to send, defaults to `build_request`), `_parse` (a whole JSON response -> Completion) and
`_consume` (an SSE stream -> Completion). `_event_json` and `_error_document` are the checks and the
error mapping all three share.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from tinyagent.defaults import DEFAULT_MAX_RETRIES, DEFAULT_PROVIDER_TIMEOUT
from tinyagent.providers.base import OnText, ProviderError, ProviderProtocolError
from tinyagent.providers.history import check_pairing
from tinyagent.providers.http.client import HttpClient
from tinyagent.providers.http.errors import error_for_status
from tinyagent.providers.http.retry import RetryPolicy, StreamProgress
from tinyagent.providers.sse import SSEEvent
from tinyagent.types import Completion, Message, ToolSpec


class HttpOptions(TypedDict, total=False):
    """How an adapter's HttpClient waits and retries: keywords every HTTP adapter accepts."""

    timeout: float
    max_retries: int
    retry: RetryPolicy | None
    sleep: Callable[[float], None]


class HttpAdapter(ABC):
    """Base of the Chat Completions, Anthropic Messages and Responses adapters."""

    name: str
    model: str
    url: str
    _http: HttpClient

    def __init__(
        self,
        name: str,
        model: str,
        url: str,
        headers: dict[str, str],
        *,
        api_key: str | None,
        key_hint: str | None,
        timeout: float = DEFAULT_PROVIDER_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Name the endpoint and open its HttpClient (`retry` overrides the policy of `max_retries`)."""
        self.name = name
        self.model = model
        self.url = url
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

    def _event_json(self, event: SSEEvent) -> dict[str, Any]:
        """The JSON object one streamed event carries (ProviderProtocolError for anything else)."""
        try:
            data = json.loads(event.data)
        except ValueError:
            raise ProviderProtocolError(f"{self.name}: malformed JSON in the response stream") from None
        if not isinstance(data, dict):
            raise ProviderProtocolError(f"{self.name}: unexpected value in the response stream")
        return data

    def _error_document(self, status: int, error: Any) -> ProviderError:
        """The ProviderError for an error object the provider sent inside a response or stream."""
        return error_for_status(
            status, json.dumps({"error": error}).encode(), provider=self.name, url=self.url
        )

    def build_request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool
    ) -> dict[str, Any]:
        """The exact request body for this history in the adapter's wire format (public for tests
        and debugging); a history whose tool calls and results do not pair up is refused first."""
        check_pairing(messages, self.name)
        return self._request_body(messages, tools, stream)

    @abstractmethod
    def _request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], stream: bool
    ) -> dict[str, Any]:
        """The request body for a history that passed the pairing check."""

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
        on_text: OnText,
    ) -> Completion:
        """An SSE stream -> Completion."""

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool, on_text: OnText = None
    ) -> Completion:
        """Send the conversation (streamed or not) and return the assistant's reply with usage."""
        body = self.request_payload(messages, tools, stream=stream)
        if not stream:
            return self._parse(self._http.post_json(self.url, body))

        def consume(events: Iterator[SSEEvent], progress: StreamProgress) -> Completion:
            return self._consume(events, progress, on_text)

        return self._http.post_sse(self.url, body, consume, on_json=self._parse)


def bearer_headers(api_key: str | None, extra_headers: Mapping[str, str] | None) -> dict[str, str]:
    """`extra_headers` plus `authorization: Bearer <key>` when there is a key."""
    headers = dict(extra_headers or {})
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers
