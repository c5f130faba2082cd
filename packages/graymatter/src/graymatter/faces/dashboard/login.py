"""The login page, and the navigation and signed-in header every dashboard page carries."""

from __future__ import annotations

from graymatter.faces.dashboard.context import Ctx, DashboardSettings, agent_nav
from graymatter.faces.dashboard.html import Markup, join, link, page, render, url


def login_page(settings: DashboardSettings, message: str, *, signed_out: bool = False) -> bytes:
    """A form that exchanges a bearer token for a session (no token field under ``--no-auth``)."""
    field = (
        Markup("")
        if settings.authenticate is None
        else Markup(
            '<label for="token">Access token</label> '
            '<input id="token" name="token" type="password" autocomplete="off" required autofocus> '
        )
    )
    note = render('<p class="error" role="alert">$m</p>', m=message) if message else Markup("")
    if signed_out:
        note = Markup('<p class="flash" role="status">Signed out.</p>')
    body = render(
        '$note<form method="post" action="$a" class="login">$field'
        '<button type="submit">Sign in</button></form>'
        "<p>Use a token from <code>graymatter token create</code> or the server's default token; "
        "<code>graymatter ui</code> prints a one-time login link.</p>",
        note=note,
        a=url("login"),
        field=field,
    )
    return page("Sign in", body, nav=Markup(""), who=Markup(""))


def nav(ctx: Ctx, agent: str | None) -> Markup:
    """Agents, health and (for an administrator) tokens; then the sections of the current agent."""
    items = [link(url(""), "Agents"), link(url("health"), "Health")]
    if ctx.is_admin and ctx.settings.tokens is not None:
        items.append(link(url("tokens"), "Tokens"))
    main = join(items, " ")
    if agent is None:
        return main
    return join([main, render('<span class="agent">Agent: <strong>$a</strong></span>', a=agent)], " ")


def who(ctx: Ctx) -> Markup:
    """Who is signed in (token id and access) and the logout button."""
    principal = ctx.principal
    scope = "all agents" if principal.all_agents else ", ".join(sorted(principal.agents))
    return render(
        "<span>token <code>$t</code> · $access · $scope</span> "
        '<form method="post" action="$a" class="inline">$csrf<button type="submit">Sign out</button></form>',
        t=principal.token_id or "local",
        access=principal.access,
        scope=scope,
        a=url("logout"),
        csrf=ctx.csrf(),
    )


__all__ = ["agent_nav", "login_page", "nav", "who"]
