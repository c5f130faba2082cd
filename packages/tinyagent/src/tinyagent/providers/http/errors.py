"""HTTP failures mapped to the ProviderError family: error responses by status, transport errors."""

from __future__ import annotations

import http.client
import json
import re
import socket
from typing import Any
from urllib.parse import urlsplit

from tinyagent.errors import TinyAgentError
from tinyagent.providers.base import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderModelNotFound,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderServerError,
)

__all__ = ["ERROR_BODY_LIMIT", "TransportError", "connection_error", "error_for_status", "transport_error"]

ERROR_BODY_LIMIT = 8 * 1024
_KEYLIKE = re.compile(r"\b(sk|rk|pk|key|sess)[-_][A-Za-z0-9_\-*.]{6,}", re.IGNORECASE)
_MODEL_MISSING = re.compile(
    r"model_not_found|model.{0,80}(not found|does not exist|not a valid model|unknown)|"
    r"(unknown|invalid|no such|not a valid) model",
    re.IGNORECASE | re.DOTALL,
)


def _is_unknown_model(code: str, message: str) -> bool:
    """OpenAI `model_not_found`, Ollama 'model "x" not found', OpenRouter 'not a valid model ID',
    Anthropic not_found_error naming the model (a 404 for a wrong path does not name one)."""
    if _MODEL_MISSING.search(f"{code} {message}"):
        return True
    return code == "not_found_error" and "model" in message.lower()


def _redact(text: str, secret: str | None) -> str:
    if secret:
        text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


def _provider_reason(body: bytes) -> tuple[str, str]:
    """(message, code) from a JSON error body, tolerating every shape providers use."""
    try:
        data = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        text = body.decode("utf-8", errors="replace").strip()
        return (text.splitlines()[0] if text else ""), ""
    error: Any = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, str):
        return error, ""
    if isinstance(error, dict):
        message = error.get("message") or error.get("type") or ""
        code = error.get("code") or error.get("type") or ""
        return str(message), str(code)
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return data["message"], str(data.get("code") or "")
    return "", ""


def error_for_status(
    status: int,
    body: bytes,
    *,
    provider: str,
    url: str,
    key_hint: str | None = None,
    api_key: str | None = None,
) -> ProviderError:
    """Map an HTTP error response to the ProviderError family (the only such mapping)."""
    message, code = _provider_reason(body[:ERROR_BODY_LIMIT])
    reason = _redact(" ".join(message.split()), api_key)[:300]
    host = urlsplit(url).netloc or url
    suffix = f": {reason}" if reason else ""
    if status in (401, 403):
        hint = f"check {key_hint}" if key_hint else "check the API key"
        return ProviderAuthError(
            f"{provider}: authentication failed (HTTP {status}) at {host}; {hint}", status=status
        )
    if status == 429:
        return ProviderRateLimited(f"{provider}: rate limited (HTTP 429) at {host}{suffix}", status=status)
    if status >= 500:
        return ProviderServerError(
            f"{provider}: server error (HTTP {status}) at {host}{suffix}", status=status
        )
    if status in (400, 404, 422) and _is_unknown_model(code, message):
        return ProviderModelNotFound(
            f"{provider}: unknown model (HTTP {status}) at {host}{suffix}; check -m/--model", status=status
        )
    if status == 404:
        path = urlsplit(url).path
        return ProviderRequestError(
            f"{provider}: endpoint not found (HTTP 404) at {host}{path}; check --base-url{suffix}",
            status=status,
        )
    return ProviderRequestError(
        f"{provider}: request rejected (HTTP {status}) at {host}{suffix}", status=status
    )


class TransportError(TinyAgentError):
    """The connection failed, dropped or timed out (mapped to ProviderConnectionError)."""

    def __init__(self, what: str, cause: BaseException | str) -> None:
        super().__init__(what)
        self.what = what
        self.cause = cause if isinstance(cause, str) else type(cause).__name__


def transport_error(exc: BaseException, *, connecting: bool) -> TransportError:
    """Name what an OS or http.client error means for the exchange (failed, dropped, timed out)."""
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
        return TransportError("timed out", exc)
    if connecting or isinstance(exc, ConnectionRefusedError | socket.gaierror):
        return TransportError("connection failed", exc)
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        return TransportError("connection dropped", exc)
    return TransportError("connection error", exc)


def connection_error(provider: str, url: str, exc: TransportError) -> ProviderConnectionError:
    """The ProviderConnectionError reported for a transport failure talking to `url`."""
    host = urlsplit(url).netloc or url
    return ProviderConnectionError(f"{provider}: {exc.what} talking to {host} ({exc.cause})")
