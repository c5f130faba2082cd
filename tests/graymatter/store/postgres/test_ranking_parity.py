"""PostgreSQL ranks exactly like SQLite: same stems, same BM25 (bit-identical scores), same phrases,
same vector order; and no text or query term can break the tsvector/tsquery literals."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter.ids import new_ulid
from graymatter.models import Fact
from graymatter.retrieval.query import query_terms
from graymatter.store.postgres.store import PostgresStore
from graymatter.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

_VOCABULARY = """
deploy deploying deployment database databases naïve naive café cafe kubernetes cluster token tokens
running runner runs o'reilly back\\slash 'quoted' ünïcödé 東京 emoji🙂 x 42 3.14
"""
WORDS = _VOCABULARY.split()
_clock = itertools.count()


def make_fact(agent: str, text: str, confidence: str = "inferred") -> Fact:
    moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=next(_clock))
    return Fact(id=new_ulid(), agent_id=agent, text=text, created_at=moment, accessed_at=moment,
                confidence=confidence)  # fmt: skip


@pytest.fixture
def stores(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[PostgresStore, SQLiteStore]]:
    pg, lite = PostgresStore(pg_dsn), SQLiteStore(tmp_path / "lite")
    yield pg, lite
    pg.close()
    lite.close()


def both(stores: tuple[Any, Any], method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return tuple(getattr(store, method)(*args, **kwargs) for store in stores)  # type: ignore[return-value]


def test_keyword_phrase_and_vector_rankings_are_identical(stores: tuple[PostgresStore, SQLiteStore]) -> None:
    rng = random.Random(7)
    facts = [make_fact(rng.choice("ab"), " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))),
                       rng.choice(["verified", "inferred", "unverified"])) for _ in range(400)]  # fmt: skip
    for store in stores:
        store.add_facts(facts[:200])
        store.add_facts(facts[200:])
        store.supersede([f.id for f in facts[:30]], "agent")
        store.delete_facts([f.id for f in facts[30:40]])
    queries = [["deploy"], ["database", "cafe"], ["naive", "token", "42"], ["running", "runs"],
               ["deploying deployment"], ["cafe naive", "cluster"], ["东京"], ["o", "reilly"],
               ["missing"]]  # fmt: skip
    for terms in queries:
        for agents, confidences in (
            (["a", "b"], None),
            (["a"], ["verified"]),
            (["b"], ["inferred", "unverified"]),
        ):
            pg, lite = both(stores, "keyword_search", agents, terms, 60, confidences)
            expected = [(h.fact_id, h.score) for h in lite]
            assert [(h.fact_id, h.score) for h in pg] == expected, (terms, agents)
        pg, lite = both(stores, "document_frequencies", terms)
        assert pg == lite
    assert both(stores, "recent", ["a", "b"], 25)[0] == both(stores, "recent", ["a", "b"], 25)[1]
    ids = [f.id for f in facts[45:60]]
    pg_n, lite_n = both(stores, "neighbours", ids, 2)
    assert {k: v for k, v in pg_n.items() if v} == {k: v for k, v in lite_n.items() if v}
    for store in stores:
        store.reset_embeddings("hash-16")
    vectors = {f.id: [rng.uniform(-1, 1) for _ in range(16)] for f in facts[40:]}
    for store in stores:
        assert store.set_vectors(vectors.items(), "hash-16") == len(facts) - 40
    for _ in range(5):
        query = [rng.uniform(-1, 1) for _ in range(16)]
        pg, lite = both(stores, "vector_search", ["a"], query, "hash-16", 20)
        assert [h.fact_id for h in pg] == [h.fact_id for h in lite]
        assert [round(h.score, 5) for h in pg] == [round(h.score, 5) for h in lite]
    assert both(stores, "stats", "a")[0] == both(stores, "stats", "a")[1]


texts = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=60
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(texts.filter(str.strip), min_size=1, max_size=4), query=texts)
def test_any_text_and_query_round_trip_identically(stores: tuple[PostgresStore, SQLiteStore],
                                                   batch: list[str], query: str) -> None:  # fmt: skip
    facts = [make_fact("h", text) for text in batch]
    for store in stores:
        store.add_facts(facts)
    terms = query_terms(query) + query_terms(" ".join(batch))[:3]
    phrase = " ".join(query_terms(batch[0])[:2])
    for candidate in (terms, [phrase] if " " in phrase else []):
        pg, lite = both(stores, "keyword_search", ["h"], candidate, 50)
        assert [(h.fact_id, h.score) for h in pg] == [(h.fact_id, h.score) for h in lite]
    pg, lite = both(stores, "document_frequencies", terms)
    assert pg == lite
    assert both(stores, "find_by_text", "h", batch[0])[0] == both(stores, "find_by_text", "h", batch[0])[1]
