"""What a dashboard page handler receives (:class:`Ctx`) and returns (:class:`Page` or :class:`Redirect`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graymatter.engine.access import Principal
from graymatter.errors import InvalidInput
from graymatter.faces.dashboard.html import Markup, hidden, link, render, url
from graymatter.faces.dashboard.sessions import Session, SessionStore

if TYPE_CHECKING:
    from graymatter.engine.access import TokenService
    from graymatter.engine.scoped import ScopedMemory

Authenticate = Callable[[str], Awaitable[object]]
"""The service's token check: a presented bearer token -> a principal (or a name), or None."""
MAX_PARAM_CHARS = 20_000
"""The longest query or form value accepted (a fact text is at most this long in a form)."""


@dataclass
class DashboardSettings:
    """How the service set the dashboard up: its authentication, accepted hosts and optional parts."""

    authenticate: Authenticate | None
    """None only for ``--no-auth`` on loopback: the login button opens an all-namespaces session."""
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()
    tokens: TokenService | None = None
    """Token management for an administrator (an all-namespaces read-write principal)."""
    metrics_text: Callable[[], str] | None = None
    """The service's Prometheus exposition, for the health page."""
    sessions: SessionStore = field(default_factory=SessionStore)
    throttle: Callable[[str], float] | None = None
    """The service's per-caller rate limit (seconds to wait, 0 = go), keyed by token id or client address."""


@dataclass
class Ctx:
    """One request, as a page handler sees it."""

    memory: ScopedMemory
    principal: Principal
    session: Session
    settings: DashboardSettings
    query: dict[str, str]
    form: dict[str, str]

    def param(self, name: str, default: str | None = None) -> str:
        """A query (or, for a POST, form) parameter; missing and without default is invalid input."""
        value = self.form.get(name, self.query.get(name, default))
        if value is None:
            raise InvalidInput(f"the {name} parameter is required")
        return value

    @property
    def agent(self) -> str:
        """The ``agent`` parameter every agent page takes."""
        value = self.param("agent")
        if not value.strip():
            raise InvalidInput("the agent parameter is required")
        self.principal.check(value, write=False)  # every agent page, even one that reads nothing yet
        return value

    def can_write(self, agent_id: str) -> bool:
        """Whether write controls are shown for ``agent_id`` (the engine checks again on every write)."""
        return self.principal.can_write(agent_id)

    @property
    def is_admin(self) -> bool:
        """An all-namespaces read-write principal: may manage tokens."""
        return self.principal.all_agents and self.principal.access == "read-write"

    def csrf(self) -> Markup:
        """The hidden CSRF field every form carries."""
        return hidden("csrf", self.session.csrf)


@dataclass
class Page:
    """A rendered page body and its title; ``status`` for error pages."""

    title: str
    body: Markup
    status: int = 200
    agent: str | None = None
    """The agent the page is about: the navigation shows its sections."""


@dataclass
class Redirect:
    """303 See Other to ``location`` (post/redirect/get after a write)."""

    location: str


Handler = Callable[[Ctx], "Page | Redirect"]


def agent_nav(agent_id: str, current: str) -> Markup:
    """The sections of one agent: facts, search, checkpoints, graph."""
    items = [("facts", "Facts"), ("search", "Search"), ("checkpoints", "Checkpoints"), ("graph", "Graph")]
    links = [link(url(p, agent=agent_id), label, current=p == current) for p, label in items]
    return render('<nav class="sub" aria-label="Agent">$a</nav>', a=Markup(" ".join(links)))
