"""The dashboard's ASGI app: Host/Origin checks, session login, CSRF, strict CSP, then one page handler.

Mounted by the HTTP service in front of its bearer-token layer: ``/`` redirects to ``/ui/``, and every page
lives under ``/ui/``, so REST, ``/mcp`` and the service paths are unchanged. A browser logs in by posting
a token (or following a one-time login URL) and gets an HttpOnly, SameSite=Strict session cookie; every
request re-checks the session's token and binds its principal, so the scoped memory enforces the token's
namespaces and read-only access exactly as over REST.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl

from graymatter.engine.access import Principal, bind_principal
from graymatter.engine.scoped import ScopedMemory
from graymatter.errors import AccessDenied, GraymatterError, InvalidInput, NotFound
from graymatter.faces.dashboard import pages_admin, pages_checkpoints, pages_fact, pages_facts
from graymatter.faces.dashboard.context import (
    MAX_PARAM_CHARS,
    Ctx,
    DashboardSettings,
    Handler,
    Page,
    Redirect,
)
from graymatter.faces.dashboard.html import PREFIX, Markup, page, render, url
from graymatter.faces.dashboard.login import login_page, nav, who
from graymatter.faces.dashboard.sessions import Session, cookie_value, session_cookie

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Reply = tuple[int, bytes, list[tuple[str, str]]]
MAX_FORM_BYTES = 64 * 1024
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
STATIC = {"dashboard.css": "text/css; charset=utf-8", "dashboard.js": "text/javascript; charset=utf-8"}
ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", ""): pages_facts.overview,
    ("GET", "facts"): pages_facts.facts,
    ("GET", "search"): pages_facts.search,
    ("GET", "fact"): pages_fact.fact,
    ("POST", "act"): pages_fact.act,
    ("GET", "checkpoints"): pages_checkpoints.checkpoints,
    ("GET", "checkpoint"): pages_checkpoints.checkpoint,
    ("GET", "diff"): pages_checkpoints.diff,
    ("GET", "graph"): pages_checkpoints.graph,
    ("GET", "tokens"): pages_admin.tokens,
    ("POST", "tokens"): pages_admin.token_action,
    ("GET", "health"): pages_admin.health,
}
_STATUS = ((NotFound, 404), (AccessDenied, 403), (InvalidInput, 400))


def is_dashboard_path(path: str) -> bool:
    """True for ``/`` and ``/ui`` and below: what the service hands to the dashboard."""
    return path in ("/", PREFIX) or path.startswith(PREFIX + "/")


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        out.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return out


def _pairs(raw: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(raw, keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise InvalidInput("parameters are not valid UTF-8") from None
    out: dict[str, str] = {}
    for key, value in pairs:
        if len(value) > MAX_PARAM_CHARS:
            raise InvalidInput(f"the {key} parameter is over {MAX_PARAM_CHARS} characters")
        out.setdefault(key, value)
    return out


def html_reply(status: int, body: bytes, extra: list[tuple[str, str]] | None = None) -> Reply:
    """An HTML response with the dashboard's security headers."""
    headers = [
        ("content-type", "text/html; charset=utf-8"),
        ("content-security-policy", CSP),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
        ("x-content-type-options", "nosniff"),
    ]
    return status, body, headers + (extra or [])


def redirect(location: str, extra: list[tuple[str, str]] | None = None) -> Reply:
    """303 See Other."""
    return html_reply(303, b"", [("location", location), *(extra or [])])


async def _send(send: Send, reply: Reply) -> None:
    status, body, headers = reply
    raw = [(k.encode(), v.encode("latin-1")) for k, v in headers]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            raise InvalidInput(f"form over {MAX_FORM_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class DashboardApp:
    """The dashboard over a scoped memory (plain ASGI; engine calls run in worker threads)."""

    def __init__(self, memory: ScopedMemory, settings: DashboardSettings) -> None:
        self.memory = memory
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            reply = await self._handle(scope, receive)
        except InvalidInput as exc:
            reply = html_reply(
                400, page("Bad request", render("<p>$m</p>", m=exc.message), nav=Markup(""), who=Markup(""))
            )
        await _send(send, reply)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> Reply | None:
        """Host (421) and Origin (403) as the API checks them; unsafe methods from another site (403)."""
        settings = self.settings
        host = headers.get("host", "").strip().lower()
        if settings.allowed_hosts and host not in settings.allowed_hosts:
            return html_reply(421, b"Host header not allowed")
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in settings.allowed_origins:
            return html_reply(403, b"Origin not allowed")
        site = headers.get("sec-fetch-site")
        if scope["method"] == "POST" and site is not None and site not in ("same-origin", "none"):
            return html_reply(403, b"cross-site request refused")
        return None

    async def _handle(self, scope: Scope, receive: Receive) -> Reply:
        path, method = scope["path"], scope["method"]
        headers = _headers(scope)
        refused = self._refusal(scope, headers)
        if refused is not None:
            return refused
        if path in ("/", PREFIX):
            return redirect(PREFIX + "/")
        name = path[len(PREFIX) + 1 :]
        if name.startswith("static/"):
            return self._static(name[len("static/") :], method)
        query = _pairs(scope.get("query_string", b"").decode("latin-1"))
        form = _pairs((await _read_body(receive)).decode("latin-1")) if method == "POST" else {}
        session = self.settings.sessions.get(cookie_value(headers.get("cookie", "")) or "")
        principal = await self._principal(session)
        slowed = self._throttled(scope, principal)
        if slowed is not None:
            return slowed
        if name in ("login", "logout"):
            return await self._login(name, method, query, form, session if principal else None)
        if session is None or principal is None:
            return redirect(url("login"), [("set-cookie", session_cookie(None))] if session else None)
        handler = ROUTES.get((method, name))
        if handler is None:
            status = 405 if any(n == name for _, n in ROUTES) else 404
            return self._page(
                Ctx(self.memory, principal, session, self.settings, query, form),
                Page("Not found", Markup("<p>No such page.</p>"), status),
            )
        if method == "POST" and not _same(form.get("csrf", ""), session.csrf):
            return html_reply(403, b"CSRF token missing or wrong: reload the page and try again")
        ctx = Ctx(self.memory, principal, session, self.settings, query, form)
        return self._page(ctx, await self._run(handler, ctx))

    def _throttled(self, scope: Scope, principal: Principal | None) -> Reply | None:
        """429 when the caller (its token, else its address: sign-in attempts too) is over the rate limit."""
        if self.settings.throttle is None:
            return None
        key = principal.token_id if principal is not None and principal.token_id else None
        wait = self.settings.throttle(key or (scope.get("client") or ("local",))[0])
        if wait <= 0:
            return None
        body = page(
            "Slow down",
            Markup("<p>Too many requests; try again shortly.</p>"),
            nav=Markup(""),
            who=Markup(""),
        )
        return html_reply(429, body, [("retry-after", str(max(1, math.ceil(wait))))])

    async def _principal(self, session: Session | None) -> Principal | None:
        """The session's principal, its token re-checked (a revoked token ends the session)."""
        if session is None:
            return None
        if session.token is None:
            return session.principal
        if self.settings.authenticate is None:
            return session.principal
        found = await self.settings.authenticate(session.token)
        if isinstance(found, Principal):
            return found
        return Principal.default(None) if isinstance(found, str) else None

    async def _run(self, handler: Handler, ctx: Ctx) -> Page | Redirect:
        from starlette.concurrency import run_in_threadpool

        def call() -> Page | Redirect:
            with bind_principal(ctx.principal):
                return handler(ctx)

        try:
            return await run_in_threadpool(call)
        except GraymatterError as exc:
            status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
            return Page("Refused" if status == 403 else "Error", render("<p>$m</p>", m=exc.message), status)

    def _page(self, ctx: Ctx, result: Page | Redirect) -> Reply:
        if isinstance(result, Redirect):
            return redirect(result.location)
        flash = pages_fact.FLASH.get(ctx.query.get("ok", ""), "")
        if ctx.query.get("ok") == "revoked":
            flash = "Token revoked."
        body = page(result.title, result.body, nav=nav(ctx, result.agent), who=who(ctx), flash=flash)
        return html_reply(result.status, body)

    async def _login(
        self, name: str, method: str, query: dict[str, str], form: dict[str, str], session: Session | None
    ) -> Reply:
        sessions = self.settings.sessions
        if name == "logout":
            if method != "POST" or session is None or not _same(form.get("csrf", ""), session.csrf):
                return redirect(url("login"))
            sessions.close(session.id)
            return redirect(url("login", out="1"), [("set-cookie", session_cookie(None))])
        principal, token = None, None
        if method == "GET" and "code" in query:
            principal = sessions.redeem_code(query["code"])
        elif method == "POST":
            token = form.get("token", "").strip()
            if self.settings.authenticate is None:
                principal, token = Principal.default(None), None
            elif token:
                found = await self.settings.authenticate(token)
                principal = (
                    found if isinstance(found, Principal) else Principal.default(None) if found else None
                )
        elif method == "GET":
            return html_reply(200, login_page(self.settings, "", signed_out="out" in query))
        if principal is None:
            message = (
                "That login link was used or has expired." if "code" in query else "That token is not valid."
            )
            return html_reply(401, login_page(self.settings, message))
        opened = sessions.open(principal, token)
        return redirect(PREFIX + "/", [("set-cookie", session_cookie(opened))])

    def _static(self, name: str, method: str) -> Reply:
        if method != "GET" or name not in STATIC:
            return html_reply(404, b"not found")
        body = resources.files("graymatter.faces.dashboard").joinpath("static", name).read_bytes()
        return (
            200,
            body,
            [
                ("content-type", STATIC[name]),
                ("cache-control", "max-age=3600"),
                ("x-content-type-options", "nosniff"),
            ],
        )


def _same(given: str, expected: str) -> bool:
    import hmac

    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())


__all__ = ["DashboardApp", "DashboardSettings", "is_dashboard_path"]
