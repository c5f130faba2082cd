"""Retries, backoff, Retry-After and the status -> ProviderError mapping, against the real stub server."""

from __future__ import annotations

import email.utils
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyagent.providers.base import (
    ProviderAuthError,
    ProviderConnectionError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderServerError,
)
from tinyagent.providers.http.client import HttpClient
from tinyagent.providers.http.errors import error_for_status
from tinyagent.providers.http.retry import RetryPolicy, parse_retry_after
from tinyagent.types import Message

PROMPT = [Message(role="user", content="hi")]


# Retry-After ---------------------------------------------------------------------------------


def test_retry_after_seconds_date_and_ms():
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 20, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(20.0)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after({"Retry-After": past}, now=now) == 0.0
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-4"}) is None
    assert parse_retry_after({"Retry-After": "nan"}) is None


@given(st.text(max_size=40), st.text(max_size=10))
def test_retry_after_never_raises_and_is_non_negative(value, ms):
    for headers in ({"Retry-After": value}, {"retry-after-ms": ms}):
        result = parse_retry_after(headers)
        assert result is None or result >= 0.0


# status mapping ------------------------------------------------------------------------------


def _body(message: str, code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": "x", "code": code}}).encode()


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, _body("Incorrect API key provided"), ProviderAuthError),
        (403, _body("forbidden"), ProviderAuthError),
        (404, _body("The model `gpt-9` does not exist", "model_not_found"), ProviderModelNotFound),
        (404, _body('model "llama9" not found, try pulling it first'), ProviderModelNotFound),
        (400, _body("foo/bar is not a valid model ID"), ProviderModelNotFound),
        (
            404,
            b'{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}',
            ProviderModelNotFound,
        ),
        (404, b"<html>Not Found</html>", ProviderRequestError),
        (
            404,
            b'{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}',
            ProviderRequestError,
        ),
        (400, _body("messages: roles must alternate"), ProviderRequestError),
        (422, _body("bad field"), ProviderRequestError),
        (429, _body("slow down"), ProviderRateLimited),
        (500, _body("oops"), ProviderServerError),
        (
            529,
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            ProviderServerError,
        ),
    ],
)
def test_status_mapping(status, body, expected):
    error = error_for_status(status, body, provider="p", url="http://127.0.0.1:9/v1/chat/completions")
    assert type(error) is expected
    assert error.status == status
    assert str(error).startswith("p: ")


def test_auth_error_names_the_variable_and_never_the_key():
    body = _body("Incorrect API key provided: sk-live-abcdef123456. You can find your key at ...")
    error = error_for_status(
        401,
        body,
        provider="openai",
        url="https://api.example/v1/x",
        key_hint="OPENAI_API_KEY",
        api_key="sk-live-abc",
    )
    assert "OPENAI_API_KEY" in str(error)
    assert "sk-live" not in str(error)
    assert "HTTP 401" in str(error)


def test_reason_is_redacted_bounded_and_single_line():
    secret = "my-very-secret-token"
    body = _body(f"bad request\nfor token {secret} and sk-proj-ABCDEFGHIJKL " + "x" * 9000)
    error = error_for_status(400, body, provider="p", url="http://h/x", api_key=secret)
    text = str(error)
    assert secret not in text and "sk-proj-ABCDEFGHIJKL" not in text
    assert "\n" not in text
    assert len(text) < 400


# retries against the stub --------------------------------------------------------------------


def test_429_with_retry_after_is_honoured_then_succeeds(stub, make, sleeps):
    stub.add({"fault": "429", "retry_after": "2"}, {"text": "ok"})
    provider = make("openai")
    completion = provider.complete(PROMPT, [], stream=False)
    assert completion.message.content == "ok"
    assert sleeps == [2.0]
    assert len(stub.requests) == 2


def test_retry_after_is_capped(stub, make, sleeps):
    stub.add({"fault": "503", "retry_after": "3600"}, {"text": "ok"})
    provider = make("openai", retry=RetryPolicy(max_retries=2, retry_after_cap=5.0, max_total_wait=100.0))
    assert provider.complete(PROMPT, [], stream=True).message.content == "ok"
    assert sleeps == [5.0]


def test_5xx_backoff_is_exponential_with_jitter_and_bounded(stub, make, sleeps):
    stub.add(*[{"fault": "500"}] * 4)
    provider = make(
        "anthropic", retry=RetryPolicy(max_retries=3, base_delay=1.0, max_delay=3.0, max_total_wait=60)
    )
    with pytest.raises(ProviderServerError) as info:
        provider.complete(PROMPT, [], stream=False)
    assert len(stub.requests) == 4
    assert "after 3 retries" in str(info.value)
    assert len(sleeps) == 3
    for delay, ceiling in zip(sleeps, [1.0, 2.0, 3.0], strict=True):
        assert ceiling / 2 <= delay <= ceiling


def test_total_wait_cap_stops_retrying_early(stub, make, sleeps):
    stub.add({"fault": "429", "retry_after": "4"}, {"fault": "429", "retry_after": "4"}, {"text": "never"})
    provider = make("codex", retry=RetryPolicy(max_retries=5, max_total_wait=6.0, retry_after_cap=10.0))
    with pytest.raises(ProviderRateLimited):
        provider.complete(PROMPT, [], stream=False)
    assert sleeps == [4.0]
    assert len(stub.requests) == 2


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        (400, {"error": {"message": "bad"}}, ProviderRequestError),
        (401, {"error": {"message": "no key"}}, ProviderAuthError),
        (403, {"error": {"message": "denied"}}, ProviderAuthError),
        (
            404,
            {"error": {"message": "The model `nope` does not exist", "code": "model_not_found"}},
            ProviderModelNotFound,
        ),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_client_errors_are_never_retried(stub, make, sleeps, status, error, expected, stream):
    stub.add({"fault": "status", "status": status, "error": error}, {"text": "unused"})
    provider = make("openai")
    with pytest.raises(expected):
        provider.complete(PROMPT, [], stream=stream)
    assert len(stub.requests) == 1
    assert sleeps == []


def test_dropped_connection_is_retried(stub, make, sleeps):
    stub.add({"fault": "drop"}, {"text": "after drop"})
    provider = make("openai")
    assert provider.complete(PROMPT, [], stream=False).message.content == "after drop"
    assert len(stub.requests) == 2 and len(sleeps) == 1


def test_dropped_connection_after_retries_is_a_connection_error(stub, make):
    stub.add(*[{"fault": "drop"}] * 4)
    provider = make("anthropic")
    with pytest.raises(ProviderConnectionError, match="connection dropped"):
        provider.complete(PROMPT, [], stream=False)
    assert len(stub.requests) == 4


def test_connection_refused_is_a_connection_error(sleeps):
    from tinyagent.providers import get_provider

    provider = get_provider(
        "openai",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        retry=RetryPolicy(max_retries=1, base_delay=0.01),
        sleep=sleeps,
    )
    with pytest.raises(ProviderConnectionError, match="connection failed"):
        provider.complete(PROMPT, [], stream=False)
    assert len(sleeps) == 1
    provider.close()


@pytest.mark.parametrize("name", ["openai", "anthropic", "codex"])
def test_stream_drop_before_any_text_reached_the_caller_is_retried(stub, make, name):
    stub.add({"text": "first try", "fault": "drop_mid_stream", "fault_at": 1}, {"text": "second try"})
    provider = make(name)
    pieces: list[str] = []
    completion = provider.complete(PROMPT, [], stream=True, on_text=pieces.append)
    assert completion.message.content == "second try"
    assert "".join(pieces) == "second try"
    assert len(stub.requests) == 2


@pytest.mark.parametrize(("name", "fault_at"), [("openai", 3), ("anthropic", 5), ("codex", 6)])
def test_stream_drop_after_text_was_handed_out_is_not_retried(stub, make, name, fault_at):
    stub.add({"text": "abcdefghi", "fault": "drop_mid_stream", "fault_at": fault_at}, {"text": "unused"})
    provider = make(name)
    pieces: list[str] = []
    with pytest.raises(ProviderConnectionError):
        provider.complete(PROMPT, [], stream=True, on_text=pieces.append)
    assert pieces, "the fault must come after some text was streamed to the caller"
    assert len(stub.requests) == 1


@pytest.mark.parametrize("name", ["openai", "anthropic", "codex"])
@pytest.mark.parametrize("stream", [False, True])
def test_malformed_json_is_a_protocol_error(stub, make, name, stream):
    stub.add({"text": "x", "fault": "malformed"}, {"text": "unused"})
    provider = make(name)
    with pytest.raises(ProviderProtocolError, match="JSON"):
        provider.complete(PROMPT, [], stream=stream)
    assert len(stub.requests) == 1


def test_error_body_read_is_bounded(stub):
    huge = {"error": {"message": "m" * 100_000}}
    stub.add({"fault": "status", "status": 400, "error": huge})
    client = HttpClient(provider="p", headers={})
    with pytest.raises(ProviderRequestError) as info:
        client.post_sse(
            stub.base_url("openai") + "/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}]},
            lambda e, p: None,
        )
    assert len(str(info.value)) < 400
    client.close()


def test_requests_carry_user_agent_and_never_log_the_key(stub, make):
    stub.add({"text": "ok"})
    make("openai").complete(PROMPT, [], stream=False)
    headers = stub.requests[0].headers
    assert headers["user-agent"].startswith("tinyagent/")
    assert headers["authorization"] == "Bearer sk-test-secret-key"


CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "x"}]}


def test_http_proxy_from_the_environment_gets_the_absolute_url(stub):
    # The stub plays the proxy: it records the request target, which must be the absolute URL.
    stub.add({"text": "via proxy"})
    client = HttpClient(provider="p", headers={}, environ={"HTTP_PROXY": stub.url})
    target = "http://upstream.invalid:8080/v1/chat/completions"
    answer = client.post_json(target, CHAT_BODY)
    client.close()
    assert answer["choices"][0]["message"]["content"] == "via proxy"
    assert stub.requests[0].path == target


def test_no_proxy_bypasses_the_proxy(stub):
    stub.add({"text": "direct"})
    environ = {"http_proxy": "http://127.0.0.1:9", "NO_PROXY": "example.com, 127.0.0.1"}
    client = HttpClient(provider="p", headers={}, environ=environ)
    answer = client.post_json(stub.base_url("openai") + "/chat/completions", CHAT_BODY)
    client.close()
    assert answer["choices"][0]["message"]["content"] == "direct"
    assert stub.requests[0].path.startswith("/")


def test_unsupported_proxy_scheme_is_a_connection_error():
    client = HttpClient(
        provider="p", headers={}, environ={"ALL_PROXY": "socks5://127.0.0.1:1080"}, retry=RetryPolicy(0)
    )
    with pytest.raises(ProviderConnectionError, match="connection failed"):
        client.post_json("http://example.invalid/v1/chat/completions", CHAT_BODY)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "identity"])
def test_compressed_bodies_are_decoded_in_any_chunking(encoding):
    import gzip
    import zlib

    from tinyagent.providers.http.decoding import ContentDecoder as _Decoder

    raw = json.dumps({"data": "x" * 5000, "n": list(range(300))}).encode()
    packed = {"gzip": gzip.compress, "deflate": zlib.compress, "identity": lambda b: b}[encoding](raw)
    for size in (1, 7, 4096):
        decoder = _Decoder(encoding)
        out = b"".join(decoder.feed(packed[i : i + size]) for i in range(0, len(packed), size))
        assert out == raw


def test_an_idle_connection_closed_by_the_server_is_replaced_without_a_retry(sleeps):
    # A keep-alive server that closes each connection shortly after answering (as real servers do
    # after their idle timeout): the next request must notice before sending and reconnect, so no
    # request is lost, retried or delayed by a backoff.
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    connections: list[int] = []
    body = json.dumps({"ok": True}).encode()

    def serve() -> None:
        for _ in range(2):
            conn, address = listener.accept()
            connections.append(address[1])
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, rest = data.partition(b"\r\n\r\n")
                length = int(
                    next(
                        h.split(b":")[1]
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length")
                    )
                )
                while len(rest) < length:
                    rest += conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                time.sleep(0.05)  # idle timeout, then the server closes its side

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    client = HttpClient(provider="p", headers={}, sleep=sleeps)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        assert client.post_json(url, CHAT_BODY) == {"ok": True}
        time.sleep(0.2)  # the server has closed the idle connection by now
        assert client.post_json(url, CHAT_BODY) == {"ok": True}
    finally:
        client.close()
        server.join(timeout=5)
        listener.close()
    assert len(connections) == 2 and connections[0] != connections[1]
    assert sleeps == []
