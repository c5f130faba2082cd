"""Dashboard sessions: one-time login codes and server-side sessions behind an HttpOnly cookie.

A session holds the principal it was opened for, the bearer token that opened it (kept in this process's
memory only, never sent back to the browser) and its CSRF token. Each request re-authenticates the stored
token, so a revoked token ends its sessions at once. Sessions live in the serving process: behind several
workers or servers a browser must be routed to the one that logged it in (decision record 0014).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from graymatter.engine.access import Principal

COOKIE_NAME = "gm_session"
SESSION_TTL_S = 8 * 3600
LOGIN_CODE_TTL_S = 600
MAX_SESSIONS = 1000
MAX_CODES = 100


@dataclass(frozen=True)
class Session:
    """One logged-in browser."""

    id: str
    csrf: str
    principal: Principal
    token: str | None
    """The bearer token that opened the session (None: a one-time code or ``--no-auth``)."""
    expires: float


class SessionStore:
    """Thread-safe in-memory sessions and one-time login codes, both bounded in number and age."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._codes: dict[str, tuple[Principal, float]] = {}

    def issue_login_code(self, principal: Principal) -> str:
        """A code that opens one session for ``principal``, once, within ten minutes."""
        code = secrets.token_urlsafe(32)
        with self._lock:
            self._expire(time.monotonic())
            if len(self._codes) >= MAX_CODES:
                self._codes.pop(next(iter(self._codes)))
            self._codes[code] = (principal, time.monotonic() + LOGIN_CODE_TTL_S)
        return code

    def redeem_code(self, code: str) -> Principal | None:
        """The principal of an unused, unexpired code (which is used up), else None."""
        with self._lock:
            self._expire(time.monotonic())
            for known in list(self._codes):
                if hmac.compare_digest(known.encode(), code.encode()):
                    return self._codes.pop(known)[0]
        return None

    def open(self, principal: Principal, token: str | None) -> Session:
        """A new session (the oldest is dropped when there are too many)."""
        session = Session(
            id=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            principal=principal,
            token=token,
            expires=time.monotonic() + SESSION_TTL_S,
        )
        with self._lock:
            self._expire(time.monotonic())
            if len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        """The live session with this id, else None."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and session.expires < time.monotonic():
                del self._sessions[session_id]
                return None
            return session

    def close(self, session_id: str) -> None:
        """End a session (logout)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def _expire(self, now: float) -> None:
        for key in [k for k, s in self._sessions.items() if s.expires < now]:
            del self._sessions[key]
        for key in [k for k, (_, until) in self._codes.items() if until < now]:
            del self._codes[key]


def session_cookie(session: Session | None, *, secure: bool = False) -> str:
    """The ``Set-Cookie`` value that stores (or, for None, clears) the session id."""
    flags = "; Path=/; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")
    if session is None:
        return f"{COOKIE_NAME}=; Max-Age=0{flags}"
    return f"{COOKIE_NAME}={session.id}; Max-Age={SESSION_TTL_S}{flags}"


def cookie_value(header: str, name: str = COOKIE_NAME) -> str | None:
    """The value of cookie ``name`` in a ``Cookie`` request header, else None."""
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name and value:
            return value
    return None
