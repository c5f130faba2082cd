"""One fact's page (revision chain, provenance, links, aliases) and the write actions on it."""

from __future__ import annotations

from typing import Any

from graymatter.errors import InvalidInput
from graymatter.faces.dashboard.context import Ctx, Page, Redirect, agent_nav
from graymatter.faces.dashboard.html import Markup, hidden, join, link, render, table, url
from graymatter.faces.dashboard.pages_facts import state_label, when
from graymatter.models import Fact

CHAIN_LIMIT = 50
SHOWN = 50
DASHBOARD_CLIENT = "graymatter-dashboard"
FLASH = {
    "revised": "Revised: this is the replacement fact.",
    "forgotten": "Forgotten: the fact is superseded.",
    "pinned": "Pinned.",
    "unpinned": "Unpinned.",
    "aliased": "Alias recorded.",
    "linked": "Link recorded.",
}


def _chain(ctx: Ctx, fact: Fact) -> list[Fact]:
    """Older versions (what this fact superseded, transitively), the fact, then what superseded it."""
    store = ctx.memory.memory.store
    older: list[Fact] = []
    frontier = [fact.id]
    while frontier and len(older) < CHAIN_LIMIT:
        previous = [i for ids in store.supersedes(frontier).values() for i in ids]
        found = [x for x in store.get_facts(previous) if x.agent_id == fact.agent_id]
        older = found + older
        frontier = [x.id for x in found]
    newer: list[Fact] = []
    nxt = fact.superseded_by
    while nxt and len(newer) < CHAIN_LIMIT:
        got = store.get_facts([nxt])
        if not got or got[0].agent_id != fact.agent_id:
            break
        newer.append(got[0])
        nxt = got[0].superseded_by
    return [*older, fact, *newer]


def fact(ctx: Ctx) -> Page:
    """A fact with its revision chain, provenance, related links and aliases, and the allowed actions."""
    item = ctx.memory.get(ctx.param("id"))
    agent = item.agent_id
    if agent != ctx.agent:
        raise InvalidInput("that fact belongs to another agent")
    words = set(item.text.lower().split())
    chain = [
        [
            link(url("fact", agent=agent, id=x.id), x.text, current=x.id == item.id),
            when(x.created_at),
            state_label(x),
        ]
        for x in _chain(ctx, item)
    ]
    prov = item.provenance
    details = table(
        ["Field", "Value"],
        [
            ["id", item.id],
            ["created", when(item.created_at)],
            ["state", state_label(item)],
            ["confidence", item.confidence],
            ["interface", prov.interface],
            ["client", prov.client or "—"],
            ["token", prov.token_id or "—"],
            ["session", prov.session or "—"],
            ["accessed", f"{item.access_count} times, last {when(item.accessed_at)}"],
        ],
    )
    links = [
        k for k in ctx.memory.links(agent) if k.source in item.text.lower() or k.target in item.text.lower()
    ]
    aliases = [
        a for a in ctx.memory.aliases(agent) if words & {a.text.lower(), *map(str.lower, a.equivalents)}
    ]
    parts = [
        agent_nav(agent, "facts"),
        render('<blockquote class="fact-text">$t</blockquote>', t=item.text),
        details,
        Markup("<h2>Revision chain</h2>"),
        table(["Text", "Created", "State"], chain),
        Markup("<h2>Links</h2>"),
        table(["Source", "Relation", "Target"], [[k.source, k.relation, k.target] for k in links[:SHOWN]])
        if links
        else Markup("<p>No links mention this fact.</p>"),
        Markup("<h2>Aliases</h2>"),
        table(["Term", "Equivalents"], [[a.text, ", ".join(a.equivalents)] for a in aliases])
        if aliases
        else Markup("<p>No aliases apply.</p>"),
    ]
    if ctx.can_write(agent):
        parts.append(_actions(ctx, item))
    return Page("Fact", join(parts), agent=agent)


def _form(ctx: Ctx, item: Fact, action: str, fields: Markup, label: str) -> Markup:
    return render(
        '<form method="post" action="$a" class="action">$csrf$agent$id$text$act$fields'
        '<button type="submit">$label</button></form>',
        a=url("act"),
        csrf=ctx.csrf(),
        agent=hidden("agent", item.agent_id),
        id=hidden("id", item.id),
        text=hidden("text", item.text),
        act=hidden("action", action),
        fields=fields,
        label=label,
    )


def _actions(ctx: Ctx, item: Fact) -> Markup:
    if not item.live:
        return Markup("<p>Superseded facts cannot be changed.</p>")
    pin = "unpin" if item.pinned else "pin"
    field = '<label>$l <input name="$n" required maxlength="$m"></label> '
    return render(
        '<h2>Actions</h2><div class="actions">$revise$forget$pin$alias$link</div>',
        revise=_form(
            ctx,
            item,
            "revise",
            render(
                '<label>New text <textarea name="new_text" required maxlength="20000">$t</textarea></label>',
                t=item.text,
            ),
            "Revise",
        ),
        forget=_form(ctx, item, "forget", Markup(""), "Forget"),
        pin=_form(ctx, item, pin, Markup(""), pin.capitalize()),
        alias=_form(
            ctx,
            item,
            "alias",
            join(
                [
                    render(field, l="Term", n="term", m=200),
                    render(field, l="Equivalents (comma-separated)", n="equivalents", m=2000),
                ]
            ),
            "Add alias",
        ),
        link=_form(
            ctx,
            item,
            "link",
            join(
                [
                    render(field, l="Source", n="source", m=200),
                    render(field, l="Relation", n="relation", m=100),
                    render(field, l="Target", n="target", m=200),
                ]
            ),
            "Add link",
        ),
    )


def act(ctx: Ctx) -> Redirect:
    """Run one write action (revise, forget, pin, unpin, alias, link) and go back to the fact."""
    agent, action, text = ctx.agent, ctx.param("action"), ctx.param("text")
    prov: dict[str, Any] = {
        "interface": "rest",
        "client": DASHBOARD_CLIENT,
        "token_id": ctx.principal.token_id,
    }
    target = ctx.param("id")
    if action == "revise":
        target = ctx.memory.revise(agent, text, ctx.param("new_text"), provenance=prov).fact.id
        done = "revised"
    elif action in ("forget", "pin", "unpin"):
        changed = getattr(ctx.memory, action)(agent, text)
        done = {"forget": "forgotten", "pin": "pinned", "unpin": "unpinned"}[action]
        if not changed:
            raise InvalidInput(f"nothing to {action}: no live fact has that text")
    elif action == "alias":
        equivalents = [e.strip() for e in ctx.param("equivalents").split(",") if e.strip()]
        ctx.memory.alias(agent, ctx.param("term"), equivalents, provenance=prov)
        done = "aliased"
    elif action == "link":
        ctx.memory.link(
            agent, ctx.param("source"), ctx.param("target"), ctx.param("relation"), provenance=prov
        )
        done = "linked"
    else:
        raise InvalidInput("unknown action")
    return Redirect(url("fact", agent=agent, id=target, ok=done))
