"""The one place tinyagent talks HTTP to a model provider.

`HttpClient` speaks HTTP/1.1 with the standard library's `http.client` over one keep-alive
connection per endpoint (`connection.py`: a stale idle connection is detected and replaced before it
is reused), with:

- retries with jittered exponential backoff on 429, 5xx and connection errors, honouring
  `Retry-After` / `retry-after-ms` (seconds or an HTTP date, capped), bounded by a number of
  attempts and a total wait (`retry.py`);
- a single mapping from HTTP status to the ProviderError family (`errors.py`: 401/403 -> auth,
  unknown model -> model-not-found, other 4xx -> request error; 400/401/403/404 are never retried);
- error bodies read up to 8 KiB; error messages carry the provider's one-line reason with anything
  that looks like a key redacted, never the request body or headers;
- streaming through `post_sse`: the attempt is retried only while no data has been handed to the
  caller; a connection dropped later is a ProviderConnectionError (`streaming.py`);
- gzip/deflate response bodies (`decoding.py`), `HTTP(S)_PROXY`/`ALL_PROXY`/`NO_PROXY` (`proxy.py`:
  http:// proxies; https through a CONNECT tunnel), certificate verification against the system store
  plus certifi's bundle when it is installed; the TLS context is built only for an https endpoint.

httpx is not used: its per-request overhead (~0.5 ms) was most of tinyagent's harness cost per step.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from tinyagent import __version__
from tinyagent.defaults import DEFAULT_PROVIDER_TIMEOUT
from tinyagent.providers.base import ProviderError, ProviderProtocolError
from tinyagent.providers.http.coalescing import send_post
from tinyagent.providers.http.connection import KeepAlive
from tinyagent.providers.http.decoding import ContentDecoder, DecodeError
from tinyagent.providers.http.errors import (
    ERROR_BODY_LIMIT,
    TransportError,
    connection_error,
    error_for_status,
    transport_error,
)
from tinyagent.providers.http.proxy import AbsoluteFormConnection
from tinyagent.providers.http.retry import RetryPolicy, StreamProgress, attempts_note, parse_retry_after
from tinyagent.providers.http.streaming import BodyStream
from tinyagent.providers.sse import SSEError, SSEEvent, iter_sse_bytes

if TYPE_CHECKING:
    import ssl

__all__ = ["MAX_RESPONSE_BYTES", "HttpClient"]

T = TypeVar("T")

MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # a whole non-streamed answer; SSE lines are bounded in sse.py


class HttpClient:
    """A retrying JSON/SSE client for one provider endpoint (one keep-alive connection)."""

    def __init__(
        self,
        *,
        provider: str,
        headers: Mapping[str, str],
        timeout: float = DEFAULT_PROVIDER_TIMEOUT,
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
        self._tls: ssl.SSLContext | None = None  # built on the first https connection
        environ = os.environ if environ is None else environ
        self._link = KeepAlive(timeout=timeout, environ=environ, tls_context=self.tls_context)
        self.sleeps: list[float] = []  # every backoff actually waited, for accounting and tests

    def close(self) -> None:
        """Close the keep-alive connection."""
        self._link.discard()

    def tls_context(self) -> ssl.SSLContext:
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
            body_stream = BodyStream(self._link, response)
            events = iter_sse_bytes(iter(body_stream))
            result = consume(events, progress)
            body_stream.drain(events)
            return result

        return self._with_retries(url, attempt)

    # internals -------------------------------------------------------------------------------
    def _exchange(self, url: str, payload: bytes, headers: Mapping[str, str]) -> http.client.HTTPResponse:
        """Send one request and return the response once its status line and headers arrived."""
        parts = urlsplit(url)
        conn = self._link.connect(parts)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if isinstance(conn, AbsoluteFormConnection):
            target = url
            headers = {**headers, **conn.proxy_headers}
        try:
            send_post(conn, target, payload, {**self._headers, **headers})
        except (OSError, http.client.HTTPException) as exc:
            self._link.discard()
            raise transport_error(exc, connecting=False) from exc
        try:
            return conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            self._link.discard()
            raise transport_error(exc, connecting=False) from exc
        except BaseException:
            self._link.discard()
            raise

    def _json(self, response: http.client.HTTPResponse, url: str) -> Any:
        """The whole body as JSON, refusing bodies over MAX_RESPONSE_BYTES."""
        decoder = ContentDecoder(response.getheader("content-encoding"))
        data = bytearray()
        while True:
            chunk = self._link.read(response, 65536)
            if not chunk:
                break
            data += decoder.feed(chunk)
            if len(data) > MAX_RESPONSE_BYTES:
                self._link.discard()
                host = urlsplit(url).netloc
                raise ProviderProtocolError(
                    f"{self.provider}: response from {host} exceeds {MAX_RESPONSE_BYTES} bytes"
                )
        self._link.finished(response, complete=True)
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
            decoder = ContentDecoder(response.getheader("content-encoding"))
            while len(data) < ERROR_BODY_LIMIT:
                chunk = response.read1(ERROR_BODY_LIMIT)
                if not chunk:
                    break
                data += decoder.feed(chunk)
        except (OSError, http.client.HTTPException, DecodeError):
            pass
        self._link.discard()
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
                self._link.discard()
                error = exc
            except TransportError as exc:
                error = connection_error(self.provider, url, exc)
            except DecodeError:
                self._link.discard()
                error = ProviderProtocolError(f"{self.provider}: response body could not be decoded")
            except SSEError as exc:
                self._link.discard()
                error = ProviderProtocolError(f"{self.provider}: malformed event stream ({exc})")
            except BaseException:
                self._link.discard()
                raise
            if not error.retryable or progress.handed_out or retry_number >= policy.max_retries:
                raise attempts_note(error, retry_number)
            retry_number += 1
            delay = policy.backoff(retry_number, self._rng)
            if error.retry_after is not None:
                delay = min(error.retry_after, policy.retry_after_cap)
            if waited + delay > policy.max_total_wait:
                raise attempts_note(error, retry_number - 1)
            waited += delay
            self.sleeps.append(delay)
            self._sleep(delay)


def _encode(body: Mapping[str, Any] | bytes) -> bytes:
    if isinstance(body, bytes):
        return body
    return json.dumps(body, ensure_ascii=False).encode("utf-8")
