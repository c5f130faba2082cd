"""The HTTP service's one authentication path: a bearer token becomes a typed :class:`Principal`."""

from __future__ import annotations

from graymatter.engine.access import Principal, PrincipalSource
from graymatter.faces.http.asgi import Scope
from graymatter.faces.http.security import IDENTITY_KEY, Authenticator


def principal_authenticator(source: PrincipalSource | None) -> Authenticator:
    """The :class:`SecurityMiddleware` gate for ``source``; the identity it records is the principal."""

    async def authenticate(presented: str) -> Principal | None:
        if source is None:
            return None
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(source.authenticate, presented)

    return authenticate


def principal_of(scope: Scope) -> Principal | None:
    """The principal the security layer authenticated for this request (None: no auth, or refused)."""
    identity = scope.get("state", {}).get(IDENTITY_KEY)
    return identity if isinstance(identity, Principal) else None
