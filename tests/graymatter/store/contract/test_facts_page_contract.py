"""Contract of ``Store.facts_page``: keyset pages newest first by (created_at, id), filters, cursors."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter.ids import new_ulid
from graymatter.models import Fact, Provenance
from graymatter.store.base import FactsPage, Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)
StoreFactory = Callable[[], Store]
CONFIDENCES = ("verified", "inferred", "unverified")
INTERFACES = ("cli", "mcp", "rest", "library")


def fact(agent: str, text: str, seconds: int = 0, **kw: Any) -> Fact:
    at = T0 + timedelta(seconds=seconds)
    return Fact(id=new_ulid(), agent_id=agent, text=text, created_at=at, accessed_at=at, **kw)


def newest_first(facts: list[Fact]) -> list[str]:
    return [f.id for f in sorted(facts, key=lambda f: (f.created_at, f.id), reverse=True)]


def walk(store: Store, agent: str, limit: int, **filters: Any) -> tuple[list[str], list[FactsPage]]:
    """Follow the cursor from the newest page to the end; every page's ids and the pages."""
    pages: list[FactsPage] = []
    before = None
    while True:
        page = store.facts_page(agent, before=before, limit=limit, **filters)
        pages.append(page)
        assert len(pages) < 500, "the cursor does not advance"
        if page.before is None:
            return [f.id for p in pages for f in p.facts], pages
        before = page.before


def test_pages_are_newest_first_and_ties_on_created_at_break_by_id(store_factory: StoreFactory) -> None:
    store = store_factory()
    same = [fact("a", f"tie {i}", 10) for i in range(5)]
    others = [fact("a", "older", 5), fact("a", "newer", 20), fact("b", "another agent", 15)]
    store.add_facts([*same, *others])
    ids, pages = walk(store, "a", 2)
    assert ids == newest_first([*same, *others[:2]])
    assert [len(p.facts) for p in pages] == [2, 2, 2, 1]
    assert [p.partial for p in pages] == [False] * 4
    first = store.facts_page("a", before=None, limit=2)
    assert first.before == (first.facts[1].created_at, first.facts[1].id)
    tied = sorted(f.id for f in same)
    inside_tie = store.facts_page("a", before=(T0 + timedelta(seconds=10), tied[2]), limit=10)
    assert [f.id for f in inside_tie.facts] == [tied[1], tied[0], others[0].id]
    assert store.facts_page("nobody", before=None, limit=5) == FactsPage([], None, False)


def test_live_superseded_and_all_views_and_aliases_never_listed(store_factory: StoreFactory) -> None:
    store = store_factory()
    live, gone = fact("a", "live", 1), fact("a", "gone", 2, superseded_by="x")
    alias = fact("a", "k8s", 3, kind="alias", equivalents=["kubernetes"])
    store.add_facts([live, gone, alias])
    assert [f.id for f in store.facts_page("a", before=None, limit=9).facts] == [live.id]
    assert [f.id for f in store.facts_page("a", before=None, limit=9, live=False).facts] == [gone.id]
    assert [f.id for f in store.facts_page("a", before=None, limit=9, live=None).facts] == [gone.id, live.id]
    assert store.facts_page("a", before=None, limit=9, live=None).facts[0] == gone


def test_label_filters_and_a_bounded_scan_say_where_they_stopped(store_factory: StoreFactory) -> None:
    store = store_factory()
    old = fact(
        "a", "old pinned mcp", 0, pinned=True, confidence="verified", provenance=Provenance(interface="mcp")
    )
    filler = [fact("a", f"filler {i}", 10 + i) for i in range(30)]
    store.add_facts([old, *filler])
    for filters in ({"pinned": True}, {"confidence": "verified"}, {"interface": "mcp"}):
        assert [f.id for f in store.facts_page("a", before=None, limit=5, **filters).facts] == [old.id]
        bounded = store.facts_page("a", before=None, limit=5, scan=10, **filters)
        tenth = store.facts_page("a", before=None, limit=10).facts[-1]
        assert bounded == FactsPage([], (tenth.created_at, tenth.id), True)
        ids, pages = walk(store, "a", 5, scan=10, **filters)
        assert ids == [old.id] and [p.partial for p in pages] == [True, True, True, False]
    assert store.facts_page("a", before=None, limit=5, pinned=False, scan=10).facts == filler[::-1][:5]
    assert store.facts_page("a", before=None, limit=50, interface="library").facts == filler[::-1]
    # a scan that ends exactly on the last fact is complete, not partial
    assert store.facts_page("a", before=None, limit=5, pinned=True, scan=31).partial is False
    # a scan bound leaves index-ordered listings alone
    assert store.facts_page("a", before=None, limit=20, scan=3).facts == filler[::-1][:20]


FACTS = st.lists(
    st.tuples(
        st.integers(0, 6),  # seconds: many ties on created_at
        st.booleans(),  # superseded
        st.booleans(),  # pinned
        st.sampled_from(CONFIDENCES),
        st.sampled_from(INTERFACES),
    ),
    max_size=30,
)
FILTERS = st.fixed_dictionaries(
    {
        "live": st.sampled_from([True, False, None]),
        "pinned": st.sampled_from([None, True, False]),
        "confidence": st.sampled_from([None, *CONFIDENCES]),
        "interface": st.sampled_from([None, *INTERFACES]),
        "scan": st.sampled_from([None, 1, 2, 5, 40]),
    }
)


def _keeps(f: Fact, filters: dict[str, Any]) -> bool:
    live, pinned, confidence, interface = (filters[k] for k in ("live", "pinned", "confidence", "interface"))
    return (
        (live is None or f.live == live)
        and (pinned is None or f.pinned == pinned)
        and (confidence is None or f.confidence == confidence)
        and (interface is None or f.provenance.interface == interface)
    )


def test_following_the_cursor_yields_every_matching_fact_exactly_once(store_factory: StoreFactory) -> None:
    store = store_factory()

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(rows=FACTS, filters=FILTERS, limit=st.integers(1, 7))
    def check(rows: list[tuple[int, bool, bool, str, str]], filters: dict[str, Any], limit: int) -> None:
        agent = new_ulid()  # a fresh namespace per example, in one store
        facts = [
            fact(agent, f"f{i}", s, superseded_by="x" if gone else None, pinned=pin, confidence=conf,
                 provenance=Provenance(interface=iface))  # type: ignore[arg-type]
            for i, (s, gone, pin, conf, iface) in enumerate(rows)
        ]  # fmt: skip
        store.add_facts([*facts, fact("other", "another agent's", 3)])
        ids, pages = walk(store, agent, limit, **filters)
        assert ids == newest_first([f for f in facts if _keeps(f, filters)])
        for page in pages:
            assert len(page.facts) <= limit
            if page.before is not None and not page.partial:
                assert len(page.facts) == limit
                assert page.before == (page.facts[-1].created_at, page.facts[-1].id)
        if filters["scan"] is None:
            assert not any(p.partial for p in pages)

    check()


def _plan(store: Store, live: bool | None, deep: bool) -> str:
    """The backend's query plan of a page walk (from the cursor when ``deep``), as one string."""
    from graymatter.store.paging import PageFilters, page_query

    if store.kind == "sqlite":
        from graymatter.store.sqlite.reads import PAGES as _PAGES

        explain, ask = "EXPLAIN QUERY PLAN ", lambda r: str(r[3])
    else:
        from graymatter.store.postgres.reads import _PAGES

        explain, ask = "EXPLAIN ", lambda r: str(r[0])
    cursor = (T0 + timedelta(seconds=1000), "m") if deep else None
    query, params = page_query(_PAGES, "a", cursor, PageFilters(live=live), [])
    rows = store._read(lambda c: c.execute(explain + query, [*params, 51]).fetchall())  # type: ignore[attr-defined]
    return " | ".join(ask(r) for r in rows)


def test_a_page_at_any_depth_is_one_index_walk_without_a_sort(store_factory: StoreFactory) -> None:
    store = store_factory()
    for agent in ("a", "b", "c"):
        store.add_facts([fact(agent, f"{i}", i, superseded_by="x" if i % 3 else None) for i in range(2000)])
    if store.kind == "postgresql":
        store._read(lambda c: c.execute("ANALYZE gm_facts"))  # type: ignore[attr-defined]
    for deep in (False, True):
        live = _plan(store, True, deep)
        everything = _plan(store, None, deep)
        if store.kind == "sqlite":
            # one listing index for both walks (schema 5), carrying superseded_by, so a live walk skips
            # tombstones inside the index; since schema 7 it has no id column, so only the facts of one
            # created-at moment (a tie) are sorted by id: the "right part" of the order, never the walk;
            # since schema 9 the agent's code is one primary-key probe of meta
            for plan in (live, everything):
                assert plan.startswith("SEARCH facts USING INDEX facts_listing (agent=? AND kind=?")
                assert plan.split(" | ")[1:] == [
                    "SCALAR SUBQUERY 1",
                    "SEARCH meta USING PRIMARY KEY (key=?)",
                    "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY",
                ], plan
        else:
            for plan in (live, everything):
                assert "Index Scan Backward using gm_facts_" in plan and re.search(
                    r"Index Cond: \(+agent_id = 'a'", plan
                )
                assert "Sort" not in plan and "Seq Scan" not in plan, plan
