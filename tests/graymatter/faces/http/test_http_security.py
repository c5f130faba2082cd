"""The shared HTTP security layer: token file, policy rules and the ASGI gate (driven in-process)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.errors import HttpSecurityError, InvalidInput
from graymatter.faces.http.security import (
    MAX_BODY_BYTES,
    TOKEN_ENV,
    TOKEN_FILE_NAME,
    SecurityMiddleware,
    build_policy,
    is_loopback,
    load_or_create_token,
    parse_bind,
    resolve_token,
)

TOKEN = "t" * 20 + "-secret"


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A real ASGI app that reports the body length and identity it saw."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    payload = json.dumps({"bytes": len(body), "identity": scope["state"]["graymatter_identity"]}).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": payload})


def request(app: Any, method: str, url: str, **kwargs: Any) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.request(method, url, **kwargs)

    return asyncio.run(go())


def gate(host: str = "127.0.0.1", port: int = 8765, **kwargs: Any) -> SecurityMiddleware:
    kwargs.setdefault("token", TOKEN)
    return SecurityMiddleware(echo_app, build_policy(host, port, **kwargs))


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_valid_token_reaches_the_app_with_safe_headers() -> None:
    response = request(gate(), "POST", "http://127.0.0.1:8765/mcp", headers=AUTH, content=b"{}")
    assert response.status_code == 200
    assert response.json() == {"bytes": 2, "identity": "default"}
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-value-123"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
)
def test_missing_or_wrong_token_is_refused(headers: dict[str, str]) -> None:
    response = request(gate(), "POST", "http://127.0.0.1:8765/mcp", headers=headers, content=b"{}")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "unauthorized"
    assert TOKEN not in response.text


@pytest.mark.parametrize("host", ["evil.example:8765", "127.0.0.1:9999", "attacker.localhost:8765", ""])
def test_foreign_host_header_is_refused(host: str) -> None:
    response = request(
        gate(), "POST", "http://127.0.0.1:8765/mcp", headers={**AUTH, "Host": host}, content=b"{}"
    )
    assert response.status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST:8765"])
def test_loopback_host_names_are_accepted(host: str) -> None:
    response = request(
        gate(), "POST", "http://127.0.0.1:8765/mcp", headers={**AUTH, "Host": host}, content=b"{}"
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://127.0.0.1:9999", "null", "https://localhost"]
)
def test_foreign_origin_is_refused(origin: str) -> None:
    response = request(
        gate(), "POST", "http://127.0.0.1:8765/mcp", headers={**AUTH, "Origin": origin}, content=b"{}"
    )
    assert response.status_code == 403


def test_own_origin_is_accepted() -> None:
    headers = {**AUTH, "Origin": "http://localhost:8765"}
    assert (
        request(gate(), "POST", "http://127.0.0.1:8765/mcp", headers=headers, content=b"{}").status_code
        == 200
    )


def test_oversize_body_is_refused_by_length_and_by_stream() -> None:
    big = b"x" * (MAX_BODY_BYTES + 1)
    response = request(gate(), "POST", "http://127.0.0.1:8765/mcp", headers=AUTH, content=big)
    assert response.status_code == 413

    async def chunks() -> Any:  # no Content-Length: the cap applies while streaming
        for _ in range(5):
            yield b"y" * (MAX_BODY_BYTES // 4)

    response = request(gate(), "POST", "http://127.0.0.1:8765/mcp", headers=AUTH, content=chunks())
    assert response.status_code == 413
    exact = b"z" * MAX_BODY_BYTES
    response = request(gate(), "POST", "http://127.0.0.1:8765/mcp", headers=AUTH, content=exact)
    assert response.status_code == 200 and response.json()["bytes"] == MAX_BODY_BYTES


def test_no_auth_only_on_loopback() -> None:
    app = gate(token=None, no_auth=True)
    assert request(app, "GET", "http://127.0.0.1:8765/mcp").json()["identity"] == "anonymous"
    for public in ("0.0.0.0", "192.168.1.20", "::", "example.com"):
        with pytest.raises(HttpSecurityError, match="loopback"):
            build_policy(public, 8765, token=None, no_auth=True)


def test_token_is_required_without_no_auth() -> None:
    with pytest.raises(HttpSecurityError, match="token is required"):
        build_policy("127.0.0.1", 8765, token=None)


def test_wildcard_bind_accepts_any_host_but_still_needs_the_token() -> None:
    app = gate(host="0.0.0.0")
    ok = request(
        app, "POST", "http://10.0.0.5:8765/mcp", headers={**AUTH, "Host": "10.0.0.5:8765"}, content=b""
    )
    assert ok.status_code == 200
    refused = request(app, "POST", "http://10.0.0.5:8765/mcp", headers={"Host": "10.0.0.5:8765"}, content=b"")
    assert refused.status_code == 401


def test_pluggable_async_authenticator() -> None:
    async def authenticate(token: str) -> str | None:
        return "tok_7" if token == "scoped-token-abcdefgh" else None

    app = SecurityMiddleware(echo_app, build_policy("127.0.0.1", 8765, token=None, authenticate=authenticate))
    headers = {"Authorization": "Bearer scoped-token-abcdefgh"}
    assert request(app, "POST", "http://127.0.0.1:8765/x", headers=headers).json()["identity"] == "tok_7"
    assert request(app, "POST", "http://127.0.0.1:8765/x", headers=AUTH).status_code == 401


def test_token_file_is_created_once_private_and_reused(tmp_path: Path) -> None:
    data = tmp_path / "store"
    first = load_or_create_token(data)
    path = data / TOKEN_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert len(first) >= 40
    assert load_or_create_token(data) == first
    assert [p.name for p in data.iterdir()] == [TOKEN_FILE_NAME]


def test_concurrent_token_creation_agrees_on_one_token(tmp_path: Path) -> None:
    results: list[str] = []
    barrier = threading.Barrier(8)

    def create() -> None:
        barrier.wait()
        results.append(load_or_create_token(tmp_path))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [TOKEN_FILE_NAME]


def test_token_precedence_flag_env_file(tmp_path: Path) -> None:
    flag, env_token = "flag-token-0123456789", "env-token-0123456789"
    assert resolve_token(tmp_path, flag, {TOKEN_ENV: env_token}) == flag
    assert resolve_token(tmp_path, None, {TOKEN_ENV: env_token}) == env_token
    assert not (tmp_path / TOKEN_FILE_NAME).exists()
    from_file = resolve_token(tmp_path, None, {})
    assert (tmp_path / TOKEN_FILE_NAME).read_text().strip() == from_file
    with pytest.raises(HttpSecurityError, match="at least 16"):
        resolve_token(tmp_path, "short", {})


def test_truncated_token_file_is_refused_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / TOKEN_FILE_NAME
    path.write_text("abc\n")
    os.chmod(path, 0o600)
    with pytest.raises(HttpSecurityError, match="too short"):
        load_or_create_token(tmp_path)
    assert path.read_text() == "abc\n"


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        (":0", ("127.0.0.1", 0)),
        ("[::1]:9", ("::1", 9)),
        ("0.0.0.0:80", ("0.0.0.0", 80)),
        ("localhost:1", ("localhost", 1)),
        ("8765", ("127.0.0.1", 8765)),
    ],
)
def test_parse_bind(address: str, expected: tuple[str, int]) -> None:
    assert parse_bind(address) == expected


@settings(deadline=None)
@given(st.text(max_size=30))
def test_parse_bind_never_crashes_unexpectedly(address: str) -> None:
    try:
        host, port = parse_bind(address)
    except InvalidInput:
        return
    assert 0 <= port <= 65535 and host


def test_is_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.5.5.5", "::1", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "::", "example.com", "localhost.evil"))
