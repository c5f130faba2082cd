"""The one place tinyagent talks HTTP to a model provider.

`HttpClient` wraps an httpx client with:

- retries with jittered exponential backoff on 429, 5xx and connection errors, honouring
  `Retry-After` / `retry-after-ms` (seconds or an HTTP date, capped), bounded by a number of
  attempts and a total wait;
- a single mapping from HTTP status to the ProviderError family (401/403 -> auth, unknown model ->
  model-not-found, other 4xx -> request error; 400/401/403/404 are never retried);
- error bodies read up to 8 KiB; error messages carry the provider's one-line reason with anything
  that looks like a key redacted, never the request body or headers;
- streaming through `post_sse`: the attempt is retried only while no data has been handed to the
  caller; a connection dropped later is a ProviderConnectionError.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from tinyagent import __version__
from tinyagent.providers.base import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderServerError,
)
from tinyagent.providers.sse import SSEError, SSEEvent, iter_sse_bytes

__all__ = ["HttpClient", "RetryPolicy", "StreamProgress", "error_for_status", "parse_retry_after"]

T = TypeVar("T")

ERROR_BODY_LIMIT = 8 * 1024
MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # a whole non-streamed answer; SSE lines are bounded in sse.py
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


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. `max_retries` extra attempts after the first (default 3 -> 4 attempts)."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total_wait: float = 60.0
    retry_after_cap: float = 30.0

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        """Exponential backoff with jitter for the n-th retry (1-based): uniform in [c/2, c]."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (retry_number - 1)))
        return rng.uniform(ceiling / 2, ceiling)


@dataclass
class StreamProgress:
    """Set `handed_out` once any streamed data reached the caller; no retry after that."""

    handed_out: bool = False


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if value >= 0 and value == value:
                return value
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if parsed is None:
            return None
        current = time.time() if now is None else now
        return max(0.0, parsed.timestamp() - current)
    if value != value or value < 0 or value == float("inf"):
        return None
    return value


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


def _connection_error(provider: str, url: str, exc: BaseException) -> ProviderConnectionError:
    host = urlsplit(url).netloc or url
    if isinstance(exc, httpx.TimeoutException):
        what = "timed out"
    elif isinstance(exc, httpx.ConnectError):
        what = "connection failed"
    elif isinstance(exc, httpx.RemoteProtocolError):
        what = "connection dropped"
    else:
        what = "connection error"
    return ProviderConnectionError(f"{provider}: {what} talking to {host} ({type(exc).__name__})")


class HttpClient:
    """A retrying JSON/SSE client for one provider endpoint."""

    def __init__(
        self,
        *,
        provider: str,
        headers: Mapping[str, str],
        timeout: float = 300.0,
        retry: RetryPolicy | None = None,
        key_hint: str | None = None,
        api_key: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        plain_http: bool = False,
    ) -> None:
        """`plain_http`: the endpoint is http:// (local Ollama, a stub), so no TLS context is built;
        loading the CA store costs ~40 ms of start-up and would never be used."""
        self.provider = provider
        self.retry = retry or RetryPolicy()
        self._key_hint = key_hint
        self._api_key = api_key
        self._sleep = sleep
        self._rng = rng or random.Random()
        all_headers = {"user-agent": f"tinyagent/{__version__}", "accept-encoding": "gzip, deflate"}
        all_headers.update({k.lower(): v for k, v in headers.items()})
        self._client = httpx.Client(
            headers=all_headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 30.0)),
            follow_redirects=False,
            verify=not plain_http,
        )
        self.sleeps: list[float] = []  # every backoff actually waited, for accounting and tests

    def close(self) -> None:
        self._client.close()

    # public API ------------------------------------------------------------------------------
    def post_json(self, url: str, body: Mapping[str, Any]) -> Any:
        """POST a JSON body and return the decoded JSON response, retrying transient failures."""
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")

        def attempt(progress: StreamProgress) -> Any:
            headers = {"content-type": "application/json"}
            with self._client.stream("POST", url, content=payload, headers=headers) as response:
                if response.status_code >= 400:
                    raise self._error(response.status_code, _read_limited(response), url, response.headers)
                return self._json(response, url)

        return self._with_retries(url, attempt)

    def post_sse(
        self,
        url: str,
        body: Mapping[str, Any],
        consume: Callable[[Iterator[SSEEvent], StreamProgress], T],
        on_json: Callable[[Any], T] | None = None,
    ) -> T:
        """POST and hand the event stream to `consume`; retried while `progress.handed_out` is False.

        A server that ignores `stream` and answers with one JSON document goes to `on_json` (the
        adapter's non-streaming parser, which also recognises an error document).
        """
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"content-type": "application/json", "accept": "text/event-stream"}

        def attempt(progress: StreamProgress) -> T:
            with self._client.stream("POST", url, content=payload, headers=headers) as response:
                if response.status_code >= 400:
                    raise self._error(response.status_code, _read_limited(response), url, response.headers)
                ctype = response.headers.get("content-type", "")
                if "text/event-stream" not in ctype and "json" in ctype:
                    if on_json is None:
                        raise self._error(502, _read_limited(response), url, response.headers)
                    return on_json(self._json(response, url))
                events = iter_sse_bytes(response.iter_bytes())
                result = consume(events, progress)
                _drain(events, response)
                return result

        return self._with_retries(url, attempt)

    # internals -------------------------------------------------------------------------------
    def _json(self, response: httpx.Response, url: str) -> Any:
        """The whole body as JSON, refusing bodies over MAX_RESPONSE_BYTES."""
        data = bytearray()
        for chunk in response.iter_bytes():
            data.extend(chunk)
            if len(data) > MAX_RESPONSE_BYTES:
                host = urlsplit(url).netloc
                raise ProviderProtocolError(
                    f"{self.provider}: response from {host} exceeds {MAX_RESPONSE_BYTES} bytes"
                )
        try:
            return json.loads(data)
        except ValueError:
            raise ProviderProtocolError(
                f"{self.provider}: response from {urlsplit(url).netloc} is not valid JSON"
            ) from None

    def _error(self, status: int, body: bytes, url: str, headers: Mapping[str, str]) -> ProviderError:
        error = error_for_status(
            status, body, provider=self.provider, url=url, key_hint=self._key_hint, api_key=self._api_key
        )
        error.retry_after = parse_retry_after(headers)
        return error

    def _with_retries(self, url: str, attempt: Callable[[StreamProgress], T]) -> T:
        policy = self.retry
        waited = 0.0
        retry_number = 0
        while True:
            progress = StreamProgress()
            try:
                return attempt(progress)
            except ProviderError as exc:
                error = exc
            except httpx.TransportError as exc:
                error = _connection_error(self.provider, url, exc)
            except httpx.DecodingError:
                error = ProviderProtocolError(f"{self.provider}: response body could not be decoded")
            except SSEError as exc:
                error = ProviderProtocolError(f"{self.provider}: malformed event stream ({exc})")
            if not error.retryable or progress.handed_out or retry_number >= policy.max_retries:
                raise _attempts_note(error, retry_number)
            retry_number += 1
            delay = policy.backoff(retry_number, self._rng)
            if error.retry_after is not None:
                delay = min(error.retry_after, policy.retry_after_cap)
            if waited + delay > policy.max_total_wait:
                raise _attempts_note(error, retry_number - 1)
            waited += delay
            self.sleeps.append(delay)
            self._sleep(delay)


DRAIN_GRACE_S = 2.0


def _drain(events: Iterator[SSEEvent], response: httpx.Response, limit: int = 1000) -> None:
    """Read what follows the terminal event (normally just the end of the body) so the connection
    goes back to the pool instead of being closed, as the OpenAI SDK does.

    The reply is already complete, so a failure here is ignored, and a server that keeps the body
    open after its terminator is cut off after DRAIN_GRACE_S (the socket is shut down, which ends
    the blocked read; the connection is then discarded, never reused).
    """
    network = response.extensions.get("network_stream")
    sock = network.get_extra_info("socket") if network is not None else None
    lock = threading.Lock()
    finished = False

    def cut_off() -> None:
        with lock:
            if not finished and sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(DRAIN_GRACE_S, cut_off)
    timer.daemon = True
    timer.start()
    try:
        for count, _ in enumerate(events):
            if count >= limit:
                break
    except (httpx.HTTPError, SSEError):
        pass
    finally:
        with lock:
            finished = True
        timer.cancel()


def _attempts_note(error: ProviderError, retries: int) -> ProviderError:
    if retries:
        error.args = (f"{error.args[0]} (after {retries} retr{'y' if retries == 1 else 'ies'})",)
    return error


def _read_limited(response: httpx.Response) -> bytes:
    data = bytearray()
    for chunk in response.iter_bytes():
        data.extend(chunk)
        if len(data) >= ERROR_BODY_LIMIT:
            break
    return bytes(data[:ERROR_BODY_LIMIT])
