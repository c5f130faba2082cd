"""Dashboard pages about facts: the agents overview, an agent's facts (filtered, paged) and search."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from graymatter.constants import Confidence
from graymatter.errors import InvalidInput
from graymatter.faces.dashboard.context import Ctx, Page, agent_nav
from graymatter.faces.dashboard.html import Markup, hidden, join, link, render, table, url
from graymatter.faces.dashboard.svg import rank_bar, sparkline
from graymatter.models import Fact, Interface
from graymatter.store.base import FactsPage

PAGE_SIZE = 50
SCAN_CAP = 20_000
"""A page filtered beyond live / all examines at most this many facts (the page says so when it stops)."""
SPARK_DAYS = 30
SPARK_SCAN = 2_000
FILTERS = {
    "state": ("live", "superseded", "all"),
    "pinned": ("any", "yes", "no"),
    "confidence": ("any", "verified", "inferred", "unverified"),
    "interface": ("any", "cli", "mcp", "rest", "library", "import", "consolidation"),
}


def when(moment: datetime | None) -> str:
    """A timestamp as the dashboard shows it (UTC, to the second)."""
    return "—" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def state_label(fact: Fact) -> Markup:
    """Live / superseded and pinned, in words (never colour alone)."""
    words = ["live" if fact.live else "superseded"] + (["pinned"] if fact.pinned else [])
    return join((render('<span class="tag tag-$w">$w</span>', w=w) for w in words), " ")


def overview(ctx: Ctx) -> Page:
    """Every readable agent: counts, last activity and a 30-day growth sparkline."""
    rows = []
    for agent_id in ctx.memory.agents():
        stats = ctx.memory.stats(agent_id)
        recent = ctx.memory.latest_facts(agent_id, SPARK_SCAN)
        counts = _daily_counts(recent)
        rows.append(
            [
                link(url("facts", agent=agent_id), agent_id),
                stats.fact_count,
                stats.superseded_count,
                stats.pinned_count,
                link(url("checkpoints", agent=agent_id), stats.checkpoint_count),
                when(stats.newest_at),
                sparkline(counts, f"{sum(counts)} facts in the last {SPARK_DAYS} days"),
            ]
        )
    headers = ["Agent", "Facts", "Superseded", "Pinned", "Checkpoints", "Last activity", "Last 30 days"]
    body = table(headers, rows) if rows else Markup("<p>No agents yet: nothing has been remembered.</p>")
    return Page("Agents", body)


def _daily_counts(facts: list[Fact]) -> list[int]:
    today = datetime.now(UTC).date()
    counts = [0] * SPARK_DAYS
    for fact in facts:
        age = (today - fact.created_at.astimezone(UTC).date()).days
        if 0 <= age < SPARK_DAYS:
            counts[SPARK_DAYS - 1 - age] += 1
    return counts


def _filters(ctx: Ctx) -> dict[str, str]:
    chosen = {}
    for name, choices in FILTERS.items():
        value = ctx.query.get(name, choices[0])
        if value not in choices:
            raise InvalidInput(f"{name} must be one of {', '.join(choices)}")
        chosen[name] = value
    return chosen


Cursor = tuple[datetime, str]
"""Where a page starts: the ``(created_at, id)`` of the row before it."""


def parse_cursor(raw: str | None) -> Cursor | None:
    """A "Next page" cursor (``ISO-time~id``, at most 200 characters), or ``None`` for the first page."""
    if not raw:
        return None
    stamp, _, fact_id = raw.partition("~")
    try:
        moment: datetime | None = datetime.fromisoformat(stamp) if len(raw) <= 200 else None
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() is None or not fact_id or "~" in fact_id:
        raise InvalidInput("before must be a cursor from a 'Next page' link")
    return moment, fact_id


def encode_cursor(cursor: Cursor) -> str:
    """The ``before`` parameter that :func:`parse_cursor` reads back as ``cursor``."""
    return f"{cursor[0].isoformat()}~{cursor[1]}"


def facts_page(ctx: Ctx, f: dict[str, str]) -> FactsPage:
    """One keyset page after the cursor, newest first (``Memory.facts_page``).

    Live / all listings are one index walk at any depth. The other filters (superseded only, pinned,
    confidence, interface) have no index: a page examines at most :data:`SCAN_CAP` facts past the cursor
    and, when they hold fewer matches than a page, is ``partial`` and offers to look further back.
    """
    state = {"live": True, "superseded": False, "all": None}[f["state"]]
    return ctx.memory.facts_page(
        ctx.agent,
        PAGE_SIZE,
        before=parse_cursor(ctx.query.get("before")),
        live=state,
        pinned=None if f["pinned"] == "any" else f["pinned"] == "yes",
        confidence=None if f["confidence"] == "any" else cast("Confidence", f["confidence"]),
        interface=None if f["interface"] == "any" else cast("Interface", f["interface"]),
        scan=SCAN_CAP,
    )


def facts(ctx: Ctx) -> Page:
    """An agent's facts with filters and keyset paging (newest first)."""
    f = _filters(ctx)
    page = facts_page(ctx, f)
    rows = [
        [
            link(url("fact", agent=ctx.agent, id=x.id), x.text if len(x.text) <= 200 else x.text[:199] + "…"),
            when(x.created_at),
            x.confidence,
            state_label(x),
            x.provenance.interface,
        ]
        for x in page.facts
    ]
    parts = [agent_nav(ctx.agent, "facts"), _filter_form(ctx, f)]
    if rows:
        parts.append(table(["Text", "Created", "Confidence", "State", "Interface"], rows))
    else:
        empty = (
            f"None of these {SCAN_CAP:,} facts match the filters."
            if page.partial
            else "No facts match these filters."
        )
        parts.append(render("<p>$m</p>", m=empty))
    if page.before is not None:
        label = f"Look further back (the next {SCAN_CAP:,} facts)" if page.partial else "Next page"
        nxt = url("facts", agent=ctx.agent, **f, before=encode_cursor(page.before))
        parts.append(render('<p class="pager"><a rel="next" href="$h">$l</a></p>', h=nxt, l=label))
    if page.partial:
        parts.append(Markup(f"<p>A filtered page looks at {SCAN_CAP:,} facts at a time.</p>"))
    return Page(f"Facts of {ctx.agent}", join(parts), agent=ctx.agent)


def _filter_form(ctx: Ctx, f: dict[str, str]) -> Markup:
    selects = []
    for name, choices in FILTERS.items():
        options = join(
            render('<option value="$v"$s>$v</option>', v=c, s=Markup(" selected") if c == f[name] else "")
            for c in choices
        )
        selects.append(render('<label>$n <select name="$n">$o</select></label>', n=name, o=options))
    return render(
        '<form class="filters" method="get" action="$a">$agent$s '
        '<button type="submit">Filter</button></form>',
        a=url("facts"),
        agent=hidden("agent", ctx.agent),
        s=join(selects, " "),
    )


def search(ctx: Ctx) -> Page:
    """Recall with its receipts: each hit's per-signal ranks, fused score and final score."""
    q = ctx.query.get("q", "")
    form = render(
        '<form class="search" method="get" action="$a" role="search">$agent'
        '<label for="q">Query</label> <input id="q" name="q" value="$q" maxlength="2000" required> '
        '<button type="submit">Search</button></form>',
        a=url("search"),
        agent=hidden("agent", ctx.agent),
        q=q,
    )
    parts = [agent_nav(ctx.agent, "search"), form]
    if q.strip():
        hits = ctx.memory.recall_explain(ctx.agent, q, 10)
        of = max(
            [len(hits), *[max(h.ranks.keyword_rank, h.ranks.vector_rank, h.ranks.recency_rank) for h in hits]]
        )
        rows = [
            [
                link(url("fact", agent=ctx.agent, id=h.id), h.text),
                rank_bar(h.ranks.keyword_rank, of, "keyword"),
                rank_bar(h.ranks.vector_rank, of, "vector"),
                rank_bar(h.ranks.recency_rank, of, "recency"),
                f"{h.ranks.fused_score:.4f}",
                f"{h.ranking.final_score:.4f}",
            ]
            for h in hits
        ]
        headers = ["Fact", "Keyword", "Vector", "Recency", "Fused (RRF)", "Final"]
        parts.append(
            table(headers, rows, f"{len(hits)} result{'' if len(hits) == 1 else 's'}")
            if rows
            else Markup("<p>No results.</p>")
        )
    return Page(f"Search {ctx.agent}", join(parts), agent=ctx.agent)
