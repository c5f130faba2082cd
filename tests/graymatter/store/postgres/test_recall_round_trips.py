"""A PostgreSQL recall costs at most three round trips (counted on the wire by a relay), ranks exactly like
SQLite, and what one recall read never answers another recall or outlives a write."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graymatter.ids import new_ulid
from graymatter.models import Fact, Provenance
from graymatter.retrieval.pipeline import RecallRequest, run_recall
from graymatter.store.postgres import PostgresStore
from graymatter.store.sqlite import SQLiteStore
from support.pg_roundtrips import RoundTripRelay

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

MAX_ROUND_TRIPS = 3
_VOCABULARY = """slow cooker recipe coconut ice cream support group deploy tuesday staging database refreshed
nightly payment service latency upgrade webhook dispatcher kubernetes cluster token rotation café naïve"""
WORDS = _VOCABULARY.split()
QUERIES = [
    "what is the latency of the payment service after the upgrade",
    "slow cooker recipe",
    "coconut ice cream",
    "when do we deploy the webhook dispatcher?",
    "support group on tuesday",
    "staging database refreshed nightly",
    "naive cafe",
    "kubernetes",
    "token rotation for the cluster",
    "missingword",
    "",
    "the and of",
]
_clock = itertools.count()


def _facts(rng: random.Random, count: int) -> list[Fact]:
    """Facts of two agents, written in sequence, half of them turns of a few sessions."""
    start = datetime(2026, 3, 1, tzinfo=UTC)
    facts = []
    for _ in range(count):
        moment = start + timedelta(seconds=30 * next(_clock))
        session = rng.choice([None, "s1", "s2", "s3"])
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        facts.append(
            Fact(
                id=new_ulid(),
                agent_id=rng.choice(["a", "a", "b"]),
                text=text,
                created_at=moment,
                accessed_at=moment,
                confidence=rng.choice(["verified", "inferred"]),
                provenance=Provenance(session=session),
            )
        )
    return facts


@pytest.fixture
def relay(pg_dsn: str) -> Iterator[RoundTripRelay]:
    with RoundTripRelay(pg_dsn) as relay:
        yield relay


@pytest.fixture
def stores(relay: RoundTripRelay, tmp_path: Path) -> Iterator[tuple[PostgresStore, SQLiteStore]]:
    facts = _facts(random.Random(13), 600)
    pg = PostgresStore(relay.dsn, min_size=1, max_size=1)
    lite = SQLiteStore(tmp_path / "lite")
    for store in (pg, lite):
        store.add_facts(facts[:300])
        store.add_facts(facts[300:])
        store.supersede([f.id for f in facts[:20]], "retired")
    yield pg, lite
    pg.close()
    lite.close()


def _ranking(store: PostgresStore | SQLiteStore, request: RecallRequest) -> list[tuple[str, float]]:
    return [(item.candidate.fact.id, item.final_score) for item in run_recall(store, request).results]


def _requests() -> list[RecallRequest]:
    out = []
    for query in QUERIES:
        out.append(RecallRequest(agent_ids=("a",), query=query))
        out.append(RecallRequest(agent_ids=("a", "b"), query=query, top_k=5))
        out.append(RecallRequest(agent_ids=("b",), query=query, min_confidence="verified"))
    return out


def test_every_recall_takes_at_most_three_round_trips_and_ranks_like_sqlite(
    stores: tuple[PostgresStore, SQLiteStore], relay: RoundTripRelay
) -> None:
    pg, lite = stores
    counts = []
    # psycopg prepares a statement on its 5th run (one round trip more, once per connection): count the
    # third pass, when every statement of these recalls is prepared.
    for counted in (False, False, True):
        for request in _requests():
            relay.reset()
            ranking = _ranking(pg, request)
            if counted:
                counts.append((relay.count(), request.query, request.agent_ids, request.min_confidence))
            assert ranking == _ranking(lite, request), request
    assert max(counts)[0] <= MAX_ROUND_TRIPS, [c for c in counts if c[0] > MAX_ROUND_TRIPS]
    assert min(counts)[0] >= 1  # the relay really saw the recalls


def test_the_relay_counts_every_statement_outside_a_recall(
    stores: tuple[PostgresStore, SQLiteStore], relay: RoundTripRelay
) -> None:
    pg, _ = stores
    relay.reset()
    pg.stats("a")  # three statements: the facts' figures, then checkpoints and links counted
    pg.recent(["a"], 5)
    pg.get_facts([f.id for f in pg.latest_facts("a", 3)])
    assert relay.count() == 6


def test_a_write_ends_what_a_recall_read(stores: tuple[PostgresStore, SQLiteStore]) -> None:
    pg, _ = stores
    request = RecallRequest(agent_ids=("a",), query="coconut ice cream")
    best = run_recall(pg, request).results[0].candidate.fact
    pg.keyword_search(["a"], ["coconut", "cream"], 100)  # a fresh read holding ``best``'s row
    assert pg.supersede([best.id], "revised") == [best.id]
    assert pg.get_facts([best.id])[0].superseded_by == "revised"
    assert best.id not in pg.rank_info([best.id])
    assert best.id not in [r.candidate.fact.id for r in run_recall(pg, request).results]


def test_another_servers_write_is_seen_by_the_next_recall(
    stores: tuple[PostgresStore, SQLiteStore], relay: RoundTripRelay
) -> None:
    pg, _ = stores
    other = PostgresStore(relay.dsn, min_size=1, max_size=1)
    try:
        request = RecallRequest(agent_ids=("a",), query="webhook dispatcher")
        first = [r.candidate.fact.id for r in run_recall(pg, request).results]
        assert other.supersede([first[0]], "revised") == [first[0]]
        again = [r.candidate.fact.id for r in run_recall(pg, request).results]
        assert first[0] not in again
        assert pg.get_facts([first[0]])[0].superseded_by == "revised"
    finally:
        other.close()


def test_a_call_outside_the_recall_ends_what_it_read(
    stores: tuple[PostgresStore, SQLiteStore], relay: RoundTripRelay
) -> None:
    pg, _ = stores
    other = PostgresStore(relay.dsn, min_size=1, max_size=1)
    try:
        hits = pg.keyword_search(["a"], ["kubernetes"], 100)  # reads ahead, rows included
        assert hits
        assert other.supersede([hits[0].fact_id], "revised") == [hits[0].fact_id]
        pg.stats("a")
        assert pg.get_facts([hits[0].fact_id])[0].superseded_by == "revised"
    finally:
        other.close()


def test_frequencies_unchanged_since_the_recall_began_are_remembered_and_any_write_refreshes_them(
    stores: tuple[PostgresStore, SQLiteStore], relay: RoundTripRelay
) -> None:
    pg, lite = stores
    other = PostgresStore(relay.dsn, min_size=1, max_size=1)  # another server on the same database
    try:
        request = RecallRequest(agent_ids=("a",), query="kubernetes cluster token")
        for _ in range(6):  # every statement prepared
            _ranking(pg, request)
        relay.reset()
        assert _ranking(pg, request) == _ranking(lite, request)
        assert relay.count() == 2  # aliases and the index's change count; the keyword read
        # another server's write makes "kubernetes" far more frequent: the next recall reads the counts
        rng = random.Random(5)
        moment = datetime(2026, 6, 1, tzinfo=UTC)
        burst = [
            Fact(
                id=new_ulid(),
                agent_id="b",
                text=f"kubernetes {rng.choice(WORDS)}",
                created_at=moment,
                accessed_at=moment,
            )
            for _ in range(400)
        ]
        other.add_facts(burst)
        lite.add_facts(burst)
        relay.reset()
        assert _ranking(pg, request) == _ranking(lite, request)
        assert relay.count() == 3
        assert pg.document_frequencies(["kubernetes"]) == lite.document_frequencies(["kubernetes"])
        relay.reset()
        assert _ranking(pg, request) == _ranking(lite, request)
        assert relay.count() == 2
    finally:
        other.close()
