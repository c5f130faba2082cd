"""The Provider protocol and the ProviderError family.

    ProviderError
    ├── ProviderAuthError        401/403: bad or missing credentials (never retried)
    ├── ProviderModelNotFound    unknown model (never retried)
    ├── ProviderRequestError     other 4xx: the request itself is wrong (never retried)
    ├── ProviderRateLimited      429 after retries were exhausted
    ├── ProviderServerError      5xx after retries were exhausted
    ├── ProviderConnectionError  connection refused/reset/dropped, timeouts (after retries)
    └── ProviderProtocolError    malformed JSON / SSE, a response we cannot interpret

Error messages never include request bodies, API keys or transcript content.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias

from tinyagent.errors import TinyAgentError
from tinyagent.types import Completion, Message, ToolSpec

OnText: TypeAlias = Callable[[str], None] | None
"""Where a streamed reply's text goes as it arrives (None: nowhere)."""


class ProviderError(TinyAgentError):
    """Base class: the provider could not produce a completion."""

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after: float | None = None  # seconds the server asked us to wait, if it said


class ProviderAuthError(ProviderError):
    """Credentials missing or rejected (HTTP 401/403)."""


class ProviderModelNotFound(ProviderError):
    """The provider does not know the requested model."""


class ProviderRequestError(ProviderError):
    """Any other client error (4xx) that retrying cannot fix."""


class ProviderRateLimited(ProviderError):
    """HTTP 429 that persisted through every retry."""

    retryable = True


class ProviderServerError(ProviderError):
    """HTTP 5xx that persisted through every retry."""

    retryable = True


class ProviderConnectionError(ProviderError):
    """The connection failed, dropped or timed out."""

    retryable = True


class ProviderProtocolError(ProviderError):
    """The response could not be parsed (malformed JSON or SSE)."""


class Provider(Protocol):
    """A model endpoint. One call to `complete` is one model request (one step)."""

    name: str
    model: str

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, stream: bool, on_text: OnText = None
    ) -> Completion:
        """Send the conversation and return the assistant's reply with normalised usage."""
        ...

    def close(self) -> None:
        """Release the HTTP client."""
        ...
