"""The one place tinyagent talks HTTP to a model provider.

`HttpClient` speaks HTTP/1.1 with the standard library's `http.client` over one keep-alive
connection per endpoint (a stale idle connection is detected and replaced before it is reused), with:

- retries with jittered exponential backoff on 429, 5xx and connection errors, honouring
  `Retry-After` / `retry-after-ms` (seconds or an HTTP date, capped), bounded by a number of
  attempts and a total wait;
- a single mapping from HTTP status to the ProviderError family (401/403 -> auth, unknown model ->
  model-not-found, other 4xx -> request error; 400/401/403/404 are never retried);
- error bodies read up to 8 KiB; error messages carry the provider's one-line reason with anything
  that looks like a key redacted, never the request body or headers;
- streaming through `post_sse`: the attempt is retried only while no data has been handed to the
  caller; a connection dropped later is a ProviderConnectionError;
- gzip/deflate response bodies, `HTTP(S)_PROXY`/`ALL_PROXY`/`NO_PROXY` (http:// proxies; https
  through a CONNECT tunnel), certificate verification against the system store plus certifi's bundle
  when it is installed; the TLS context is built only for an https endpoint.

httpx is not used: its per-request overhead (~0.5 ms) was most of tinyagent's harness cost per step.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import os
import random
import re
import select
import socket
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import SplitResult, unquote, urlsplit

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


class _TransportError(Exception):
    """The connection failed, dropped or timed out (mapped to ProviderConnectionError)."""

    def __init__(self, what: str, cause: BaseException | str) -> None:
        super().__init__(what)
        self.what = what
        self.cause = cause if isinstance(cause, str) else type(cause).__name__


class _DecodeError(Exception):
    """A compressed response body could not be decoded."""


def _transport_error(exc: BaseException, *, connecting: bool) -> _TransportError:
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
        return _TransportError("timed out", exc)
    if connecting or isinstance(exc, ConnectionRefusedError | socket.gaierror):
        return _TransportError("connection failed", exc)
    if isinstance(exc, http.client.HTTPException | ConnectionError):
        return _TransportError("connection dropped", exc)
    return _TransportError("connection error", exc)


def _connection_error(provider: str, url: str, exc: _TransportError) -> ProviderConnectionError:
    host = urlsplit(url).netloc or url
    return ProviderConnectionError(f"{provider}: {exc.what} talking to {host} ({exc.cause})")


def _env_proxy(parts: SplitResult, environ: Mapping[str, str]) -> str | None:
    """The proxy URL the environment asks for `parts` (as curl/httpx read it), or None."""
    found: dict[str, str] = {}
    for key, value in environ.items():
        lowered = key.lower()
        if lowered.endswith("_proxy") and value and (lowered not in found or key == lowered):
            found[lowered] = value
    proxy = found.get(f"{parts.scheme}_proxy") or found.get("all_proxy")
    if not proxy:
        return None
    host = (parts.hostname or "").lower()
    for entry in found.get("no_proxy", "").split(","):
        entry = entry.strip().lower()
        if entry == "*":
            return None
        entry = entry.lstrip(".").split(":")[0] if not entry.startswith("[") else entry
        if entry and (host == entry or host.endswith("." + entry)):
            return None
    return proxy if "://" in proxy else "http://" + proxy


class _Decoder:
    """Undo `Content-Encoding: gzip|deflate` incrementally (identity passes through)."""

    def __init__(self, encoding: str | None) -> None:
        encoding = (encoding or "identity").strip().lower()
        if encoding in ("", "identity"):
            self._z = None
        elif encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped (raw deflate retried below)
        else:
            raise _DecodeError(f"unsupported content-encoding {encoding!r}")
        self._deflate = encoding == "deflate"
        self._started = False

    def feed(self, data: bytes) -> bytes:
        if self._z is None:
            return data
        try:
            out = self._z.decompress(data)
        except zlib.error as exc:
            if self._deflate and not self._started:  # some servers send raw deflate
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                self._deflate = False
                return self.feed(data)
            raise _DecodeError(str(exc)) from None
        self._started = True
        return out


class HttpClient:
    """A retrying JSON/SSE client for one provider endpoint (one keep-alive connection)."""

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
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """`timeout` bounds connecting (at most 30 s) and every read; `environ` supplies the proxy
        variables (default os.environ)."""
        self.provider = provider
        self.retry = retry or RetryPolicy()
        self._key_hint = key_hint
        self._api_key = api_key
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._headers = {"user-agent": f"tinyagent/{__version__}", "accept-encoding": "gzip, deflate"}
        self._headers.update({k.lower(): v for k, v in headers.items()})
        self._timeout = timeout
        self._connect_timeout = min(timeout, 30.0)
        self._environ = os.environ if environ is None else environ
        self._conn: http.client.HTTPConnection | None = None
        self._conn_origin: tuple[str, str, int] | None = None
        self._tls: Any = None  # ssl.SSLContext, built on the first https connection
        self.sleeps: list[float] = []  # every backoff actually waited, for accounting and tests

    def close(self) -> None:
        self._discard()

    def tls_context(self) -> Any:
        """The certificate-verifying ssl.SSLContext used for https (built once, on first use)."""
        if self._tls is None:
            import ssl

            context = ssl.create_default_context()  # system store; honours SSL_CERT_FILE/SSL_CERT_DIR
            try:
                import certifi  # what httpx/requests verify against; absent -> system store only

                context.load_verify_locations(certifi.where())
            except (ImportError, OSError):
                pass
            self._tls = context
        return self._tls

    # public API ------------------------------------------------------------------------------
    def post_json(self, url: str, body: Mapping[str, Any] | bytes) -> Any:
        """POST a JSON body (a mapping, or its UTF-8 JSON encoding) and return the decoded JSON
        response, retrying transient failures."""
        payload = _encode(body)
        headers = {"content-type": "application/json"}

        def attempt(progress: StreamProgress) -> Any:
            response = self._exchange(url, payload, headers)
            if response.status >= 400:
                raise self._error(response.status, self._read_limited(response), url, response)
            return self._json(response, url)

        return self._with_retries(url, attempt)

    def post_sse(
        self,
        url: str,
        body: Mapping[str, Any] | bytes,
        consume: Callable[[Iterator[SSEEvent], StreamProgress], T],
        on_json: Callable[[Any], T] | None = None,
    ) -> T:
        """POST and hand the event stream to `consume`; retried while `progress.handed_out` is False.

        A server that ignores `stream` and answers with one JSON document goes to `on_json` (the
        adapter's non-streaming parser, which also recognises an error document).
        """
        payload = _encode(body)
        headers = {"content-type": "application/json", "accept": "text/event-stream"}

        def attempt(progress: StreamProgress) -> T:
            response = self._exchange(url, payload, headers)
            if response.status >= 400:
                raise self._error(response.status, self._read_limited(response), url, response)
            ctype = response.getheader("content-type") or ""
            if "text/event-stream" not in ctype and "json" in ctype:
                if on_json is None:
                    raise self._error(502, self._read_limited(response), url, response)
                return on_json(self._json(response, url))
            body_stream = _BodyStream(self, response)
            events = iter_sse_bytes(iter(body_stream))
            result = consume(events, progress)
            body_stream.drain(events)
            return result

        return self._with_retries(url, attempt)

    # connection ------------------------------------------------------------------------------
    def _discard(self) -> None:
        conn, self._conn, self._conn_origin = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass

    def _connection(self, parts: SplitResult) -> http.client.HTTPConnection:
        """The keep-alive connection for this origin; a new one when there is none or it went stale."""
        scheme = parts.scheme.lower()
        try:
            port = parts.port or (443 if scheme == "https" else 80)
        except ValueError as exc:
            raise _TransportError("connection failed", "invalid port") from exc
        origin = (scheme, (parts.hostname or ""), port)
        conn = self._conn
        # An idle keep-alive socket has nothing to read unless the server closed it.
        reusable = conn is not None and self._conn_origin == origin and conn.sock is not None
        if reusable and conn is not None and conn.sock is not None and not _readable(conn.sock):
            conn.sock.settimeout(self._timeout)
            return conn
        self._discard()
        host = origin[1]
        proxy = _env_proxy(parts, self._environ)
        if proxy is None:
            if scheme == "https":
                conn = _HTTPSConnection(host, port, timeout=self._connect_timeout, context=self.tls_context())
            else:
                conn = _HTTPConnection(host, port, timeout=self._connect_timeout)
        else:
            conn = self._proxied(scheme, host, port, proxy)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _transport_error(exc, connecting=True) from exc
        assert conn.sock is not None
        conn.sock.settimeout(self._timeout)
        self._conn, self._conn_origin = conn, origin
        return conn

    def _proxied(self, scheme: str, host: str, port: int, proxy: str) -> http.client.HTTPConnection:
        pp = urlsplit(proxy)
        if pp.scheme.lower() != "http" or not pp.hostname:
            raise _TransportError("connection failed", f"unsupported proxy scheme {pp.scheme or '?'}://")
        auth: dict[str, str] = {}
        if pp.username is not None:
            token = f"{unquote(pp.username)}:{unquote(pp.password or '')}".encode()
            auth["Proxy-Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
        if scheme == "https":
            conn: http.client.HTTPConnection = _HTTPSConnection(
                pp.hostname, pp.port or 80, timeout=self._connect_timeout, context=self.tls_context()
            )
            conn.set_tunnel(host, port, headers=auth)
        else:
            conn = _AbsoluteFormConnection(pp.hostname, pp.port or 80, timeout=self._connect_timeout)
            conn.proxy_headers = auth
        return conn

    def _exchange(self, url: str, payload: bytes, headers: Mapping[str, str]) -> http.client.HTTPResponse:
        """Send one request and return the response once its status line and headers arrived."""
        parts = urlsplit(url)
        conn = self._connection(parts)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if isinstance(conn, _AbsoluteFormConnection):
            target = url
            headers = {**headers, **conn.proxy_headers}
        try:
            _request(conn, target, payload, {**self._headers, **headers})
        except (OSError, http.client.HTTPException) as exc:
            self._discard()
            raise _transport_error(exc, connecting=False) from exc
        try:
            return conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._discard()
            raise _transport_error(exc, connecting=False) from exc
        except BaseException:
            self._discard()
            raise

    def _finished(self, response: http.client.HTTPResponse, complete: bool) -> None:
        """Keep the connection for the next request only if this response was read to its end."""
        if complete and not response.will_close:
            response.close()  # releases the body; the socket stays open for the next request
        else:
            self._discard()

    def _read(self, response: http.client.HTTPResponse, amount: int) -> bytes:
        try:
            return response.read1(amount)
        except (OSError, http.client.HTTPException) as exc:
            self._discard()
            raise _transport_error(exc, connecting=False) from exc

    # internals -------------------------------------------------------------------------------
    def _json(self, response: http.client.HTTPResponse, url: str) -> Any:
        """The whole body as JSON, refusing bodies over MAX_RESPONSE_BYTES."""
        decoder = _Decoder(response.getheader("content-encoding"))
        data = bytearray()
        while True:
            chunk = self._read(response, 65536)
            if not chunk:
                break
            data += decoder.feed(chunk)
            if len(data) > MAX_RESPONSE_BYTES:
                self._discard()
                host = urlsplit(url).netloc
                raise ProviderProtocolError(
                    f"{self.provider}: response from {host} exceeds {MAX_RESPONSE_BYTES} bytes"
                )
        self._finished(response, complete=True)
        try:
            return json.loads(data)
        except ValueError:
            raise ProviderProtocolError(
                f"{self.provider}: response from {urlsplit(url).netloc} is not valid JSON"
            ) from None

    def _read_limited(self, response: http.client.HTTPResponse) -> bytes:
        """Up to ERROR_BODY_LIMIT bytes of an error body (the connection is then not reused)."""
        data = bytearray()
        try:
            decoder = _Decoder(response.getheader("content-encoding"))
            while len(data) < ERROR_BODY_LIMIT:
                chunk = response.read1(ERROR_BODY_LIMIT)
                if not chunk:
                    break
                data += decoder.feed(chunk)
        except (OSError, http.client.HTTPException, _DecodeError):
            pass
        self._discard()
        return bytes(data[:ERROR_BODY_LIMIT])

    def _error(self, status: int, body: bytes, url: str, response: http.client.HTTPResponse) -> ProviderError:
        error = error_for_status(
            status, body, provider=self.provider, url=url, key_hint=self._key_hint, api_key=self._api_key
        )
        error.retry_after = parse_retry_after(dict(response.getheaders()))
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
                self._discard()
                error = exc
            except _TransportError as exc:
                error = _connection_error(self.provider, url, exc)
            except _DecodeError:
                self._discard()
                error = ProviderProtocolError(f"{self.provider}: response body could not be decoded")
            except SSEError as exc:
                self._discard()
                error = ProviderProtocolError(f"{self.provider}: malformed event stream ({exc})")
            except BaseException:
                self._discard()
                raise
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


def _encode(body: Mapping[str, Any] | bytes) -> bytes:
    if isinstance(body, bytes):
        return body
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


class _Coalescing:
    """Mixin for http.client connections: a request's head and body leave in one write.

    `HTTPConnection.request` sends the head and then the body with two `send` calls; while
    `coalesce` is set the first is held back and joined to the next, so the server gets the whole
    request in one segment (one syscall here, one wake-up there). `_request` always flushes.
    """

    coalesce = False
    _held: bytes | None = None

    def send(self, data: Any) -> None:
        if self.coalesce and isinstance(data, bytes | bytearray):
            if self._held is None:
                self._held = bytes(data)
                return
            data, self._held = self._held + bytes(data), None
        elif self._held is not None:
            held, self._held = self._held, None
            super().send(held)  # type: ignore[misc]
        super().send(data)  # type: ignore[misc]

    def flush_held(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            super().send(held)  # type: ignore[misc]


class _HTTPConnection(_Coalescing, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_Coalescing, http.client.HTTPSConnection):
    pass


def _request(
    conn: http.client.HTTPConnection, target: str, payload: bytes, headers: Mapping[str, str]
) -> None:
    """POST `payload` on `conn`, head and body in one write when the connection can coalesce."""
    if not isinstance(conn, _Coalescing):
        conn.request("POST", target, body=payload, headers=dict(headers))
        return
    conn.coalesce = True
    try:
        conn.request("POST", target, body=payload, headers=dict(headers))
        conn.coalesce = False
        conn.flush_held()  # a body-less request leaves its head held
    finally:
        conn.coalesce = False
        conn._held = None


class _AbsoluteFormConnection(_HTTPConnection):
    """A plain connection to an http:// proxy: requests carry the absolute URL as their target."""

    proxy_headers: dict[str, str]


def _readable(sock: socket.socket) -> bool:
    """True if `sock` has data or EOF pending (for an idle keep-alive socket: the server closed it)."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


DRAIN_GRACE_S = 2.0


class _BodyStream:
    """The decoded chunks of a streamed body; `drain` reads what follows the terminal event."""

    def __init__(self, client: HttpClient, response: http.client.HTTPResponse) -> None:
        self._client = client
        self._response = response
        self._decoder = _Decoder(response.getheader("content-encoding"))
        self._deadline: float | None = None
        self.complete = False

    def __iter__(self) -> Iterator[bytes]:
        while True:
            if self._deadline is not None:
                remaining = self._deadline - time.monotonic()
                sock = self._client._conn.sock if self._client._conn is not None else None
                if remaining <= 0 or sock is None:
                    raise _TransportError("timed out", "drain")
                sock.settimeout(remaining)
            chunk = self._client._read(self._response, 65536)
            if not chunk:
                self.complete = True
                return
            data = self._decoder.feed(chunk)
            if data:
                yield data

    def drain(self, events: Iterator[SSEEvent], limit: int = 1000) -> None:
        """Read what follows the terminal event (normally just the end of the body) so the connection
        can be reused, as the OpenAI SDK does.

        The reply is already complete, so a failure here is ignored, and a server that keeps the body
        open after its terminator is cut off after DRAIN_GRACE_S (the connection is then discarded,
        never reused). No thread or timer: each read waits at most until the deadline.
        """
        self._deadline = time.monotonic() + DRAIN_GRACE_S
        try:
            for count, _ in enumerate(events):
                if count >= limit:
                    break
        except (_TransportError, _DecodeError, SSEError):
            pass
        self._client._finished(self._response, complete=self.complete)


def _attempts_note(error: ProviderError, retries: int) -> ProviderError:
    if retries:
        error.args = (f"{error.args[0]} (after {retries} retr{'y' if retries == 1 else 'ies'})",)
    return error
