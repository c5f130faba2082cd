"""The HTTP security layer shared by every graymatter HTTP face (MCP streamable HTTP, REST).

* A bearer token is required: ``--token``, else ``GRAYMATTER_HTTP_TOKEN``, else the token file
  ``<dir>/graymatter.http-token`` (generated once, mode 0600). Tokens are compared in constant time.
* ``--no-auth`` is refused unless the bind address is loopback.
* ``Host`` and ``Origin`` are validated against DNS rebinding; a browser page on another origin is refused.
* Request bodies over 1 MiB are refused with 413 before the application sees a byte.

:class:`SecurityMiddleware` is plain ASGI (no framework imports), so any ASGI app can be wrapped, and the
token check is pluggable (``authenticate``) so a multi-token scheme can reuse the same gate.
"""

from __future__ import annotations

import contextlib
import hmac
import inspect
import ipaddress
import json
import os
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from graymatter.bounded import TOKEN_FILE_MAX_BYTES
from graymatter.errors import GraymatterError, HttpSecurityError, InvalidInput
from graymatter.faces.http.asgi import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from graymatter.engine.access import Principal

TOKEN_FILE_NAME = "graymatter.http-token"
TOKEN_ENV = "GRAYMATTER_HTTP_TOKEN"
MAX_BODY_BYTES = 1024 * 1024
MIN_TOKEN_CHARS = 16
DEFAULT_HOST = "127.0.0.1"

IDENTITY_KEY = "graymatter_identity"
"""Where :class:`SecurityMiddleware` puts the authenticated identity: ``scope["state"][IDENTITY_KEY]``."""
Identity: TypeAlias = "str | Principal"
Authenticator = Callable[[str], "Identity | Awaitable[Identity | None] | None"]
"""Maps a presented bearer token to an identity (a name or a principal), or None when it is not valid."""


# ------------------------------------------------------------------------------------------------------------
# Addresses
# ------------------------------------------------------------------------------------------------------------


def parse_bind(address: str) -> tuple[str, int]:
    """Parse ``HOST:PORT``, ``[V6]:PORT``, ``:PORT`` or ``PORT`` (host defaults to 127.0.0.1)."""
    text = address.strip()
    if text.isdigit():
        text = f":{text}"  # a bare port binds the loopback default
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise InvalidInput(f"--http expects HOST:PORT, got {address!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise InvalidInput(f"--http expects HOST:PORT with a numeric port, got {address!r}") from None
    if not 0 <= port <= 65535:
        raise InvalidInput(f"--http port must be between 0 and 65535, got {port}")
    return host, port


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """True for the all-interfaces addresses 0.0.0.0 and ::."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _host_literal(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# ------------------------------------------------------------------------------------------------------------
# Tokens
# ------------------------------------------------------------------------------------------------------------


def generate_token() -> str:
    """A fresh 256-bit URL-safe token."""
    return secrets.token_urlsafe(32)


def load_or_create_token(data_dir: Path) -> str:
    """Read ``<data_dir>/graymatter.http-token``, creating it (0600, atomically, exactly once) if missing.

    Creation writes a private temporary file and hard-links it into place, so two servers starting at the
    same moment agree on one token and nobody ever reads a half-written file.
    """
    from graymatter.fsutil import ensure_private_dir

    directory = ensure_private_dir(Path(data_dir))
    path = directory / TOKEN_FILE_NAME
    if not path.exists():
        tmp = directory / f".{TOKEN_FILE_NAME}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(generate_token() + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise HttpSecurityError(f"cannot read the HTTP token file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        raw = handle.read(TOKEN_FILE_MAX_BYTES + 1)
    if len(raw) > TOKEN_FILE_MAX_BYTES:
        raise HttpSecurityError(f"the HTTP token file {path} is larger than {TOKEN_FILE_MAX_BYTES} bytes")
    token = raw.decode("ascii", errors="replace").strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise HttpSecurityError(f"the HTTP token file {path} is empty or too short; delete it to regenerate")
    return token


def resolve_token(data_dir: Path, explicit: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The token to require: ``--token``, else ``$GRAYMATTER_HTTP_TOKEN``, else the token file."""
    env = os.environ if environ is None else environ
    for source, value in (("--token", explicit), (TOKEN_ENV, env.get(TOKEN_ENV))):
        if value is not None:
            value = value.strip()
            if len(value) < MIN_TOKEN_CHARS:
                raise HttpSecurityError(f"{source} must be at least {MIN_TOKEN_CHARS} characters long")
            return value
    return load_or_create_token(data_dir)


def static_token_authenticator(token: str, identity: str = "default") -> Authenticator:
    """An authenticator accepting exactly ``token`` (constant-time comparison)."""
    expected = token.encode()

    def authenticate(presented: str) -> str | None:
        return identity if hmac.compare_digest(presented.encode(), expected) else None

    return authenticate


# ------------------------------------------------------------------------------------------------------------
# Policy
# ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpSecurityPolicy:
    """What :class:`SecurityMiddleware` enforces."""

    authenticate: Authenticator | None
    """None only for ``--no-auth`` on a loopback address."""
    allowed_hosts: frozenset[str] = field(default_factory=frozenset)
    """Accepted ``Host`` header values (lower-case ``host[:port]``); empty means any host."""
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    """Accepted ``Origin`` values; requests without an Origin header (non-browser clients) pass."""
    max_body_bytes: int = MAX_BODY_BYTES


def require_loopback_for_no_auth(host: str) -> None:
    """Refuse ``--no-auth`` unless ``host`` is a loopback address."""
    if not is_loopback(host):
        raise HttpSecurityError(
            f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1, localhost), not {host}"
        )


def build_policy(
    host: str,
    port: int,
    *,
    token: str | None,
    no_auth: bool = False,
    authenticate: Authenticator | None = None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
) -> HttpSecurityPolicy:
    """The policy for a server bound to ``host:port``.

    Loopback binds accept only loopback Host names; a specific public address accepts itself; a wildcard
    bind (0.0.0.0, ::) cannot know its names, so it accepts any Host plus ``extra_hosts`` and relies on the
    token. Browser origins are limited to the server's own origins plus ``extra_origins``.
    """
    extra_hosts = [h.strip().lower() for h in extra_hosts]
    extra_origins = [o.strip().rstrip("/").lower() for o in extra_origins]
    if no_auth:
        require_loopback_for_no_auth(host)
        gate: Authenticator | None = None
    elif authenticate is not None:
        gate = authenticate
    elif token:
        gate = static_token_authenticator(token)
    else:
        raise HttpSecurityError(
            "an HTTP token is required (use --token, GRAYMATTER_HTTP_TOKEN or the token file)"
        )
    names = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(host) else [_host_literal(host)]
    hosts: set[str] = set()
    origins: set[str] = set()
    if not is_wildcard(host):
        for name in names:
            hosts.update({name, f"{name}:{port}"})
            origins.update({f"http://{name}:{port}", f"https://{name}:{port}"})
            if port in (80, 443):
                origins.update({f"http://{name}", f"https://{name}"})
    hosts.update(extra_hosts)
    origins.update(extra_origins)
    if is_wildcard(host) and not extra_hosts:
        hosts = set()  # any Host; the bearer token is the gate
    return HttpSecurityPolicy(
        authenticate=gate,
        allowed_hosts=frozenset(hosts),
        allowed_origins=frozenset(origins),
        max_body_bytes=max_body_bytes,
    )


# ------------------------------------------------------------------------------------------------------------
# Middleware
# ------------------------------------------------------------------------------------------------------------


class _BodyTooLarge(Exception):
    pass


class SecurityMiddleware:
    """ASGI middleware enforcing an :class:`HttpSecurityPolicy` in front of ``app``.

    Checks run in this order, each refusing with a JSON error and nothing reaching ``app``: Host (421),
    Origin (403), bearer token (401), body size (413). The authenticated identity is put in
    ``scope["state"]["graymatter_identity"]``. Lifespan and other non-HTTP scopes pass through.
    """

    def __init__(self, app: ASGIApp, policy: HttpSecurityPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        policy = self.policy
        host = headers.get("host", "").strip().lower()
        if policy.allowed_hosts and host not in policy.allowed_hosts:
            await _refuse(send, 421, "misdirected_request", "Host header not allowed")
            return
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in policy.allowed_origins:
            await _refuse(send, 403, "forbidden_origin", "Origin not allowed")
            return
        identity = await self._identity(headers, send)
        if identity is None:
            return
        length = headers.get("content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _refuse(send, 400, "bad_request", "invalid Content-Length")
                return
            if declared > policy.max_body_bytes:
                await _refuse(
                    send, 413, "payload_too_large", f"request body over {policy.max_body_bytes} bytes"
                )
                return
        try:
            body_receive = await _buffered_receive(receive, policy.max_body_bytes)
        except _BodyTooLarge:
            await _refuse(send, 413, "payload_too_large", f"request body over {policy.max_body_bytes} bytes")
            return
        scope.setdefault("state", {})[IDENTITY_KEY] = identity
        await self.app(scope, body_receive, _with_safe_headers(send))

    async def _identity(self, headers: dict[str, str], send: Send) -> Identity | None:
        """The caller's identity, or None once a refusal was sent: 401 for a missing or unknown token,
        the error's status (503 while the token store is unreachable) when checking it failed."""
        authenticate = self.policy.authenticate
        if authenticate is None:
            return "anonymous"
        scheme, _, presented = headers.get("authorization", "").partition(" ")
        presented = presented.strip()
        verdict: Identity | None = None
        if scheme.lower() == "bearer" and presented:
            try:
                outcome = authenticate(presented)
                verdict = await outcome if inspect.isawaitable(outcome) else outcome
            except GraymatterError as exc:
                from graymatter.faces.http.errors import status_for

                await _refuse(send, status_for(exc), exc.code, (exc.message.splitlines() or [exc.code])[0])
                return None
        if verdict is None:
            await _refuse(
                send,
                401,
                "unauthorized",
                "a valid bearer token is required",
                extra=[(b"www-authenticate", b'Bearer realm="graymatter"')],
            )
        return verdict


def _headers(scope: Scope) -> dict[str, str]:
    """Request headers, lower-cased names; a repeated header keeps its first value."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        out.setdefault(name, raw_value.decode("latin-1"))
    return out


async def _buffered_receive(receive: Receive, limit: int) -> Receive:
    """Read the whole request body (refusing more than ``limit`` bytes) and replay it to the app."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            pending: list[Message] = [message]
            break
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(body)
        if not message.get("more_body", False):
            pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
            break

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _with_safe_headers(send: Send) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {name.lower() for name, _ in headers}
            if b"cache-control" not in names:
                headers.append((b"cache-control", b"no-store"))
            if b"x-content-type-options" not in names:
                headers.append((b"x-content-type-options", b"nosniff"))
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


async def _refuse(
    send: Send, status: int, code: str, message: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
