"""Schema 4 (positions in the postings, no GIN index, a half-precision vector graph) keeps every fact of a
schema-3 database and ranks exactly as before, and as SQLite; schema 5 counts the full-text changes of every
writer (also one of the previous version still running), and keeps every fact of a schema-4 database."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from graymatter.ids import new_ulid
from graymatter.models import Fact, Provenance
from graymatter.store.postgres import PostgresStore
from graymatter.store.postgres.schema import SCHEMA_VERSION
from graymatter.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

_VOCABULARY = "slow cooker recipe coconut ice cream deploy tuesday staging database naïve café o'reilly"
WORDS = _VOCABULARY.split()
# The schema-3 shape: postings without positions, a GIN index over the tsvectors, a full-precision graph.
TO_SCHEMA_4 = [  # schema 5: the full-text statistics count their changes
    "DROP TRIGGER gm_fts_stats_changes ON gm_fts_stats",
    "DROP FUNCTION gm_fts_stats_count()",
    "ALTER TABLE gm_fts_stats DROP COLUMN changes",
]
TO_SCHEMA_3 = [
    *TO_SCHEMA_4,
    "ALTER TABLE gm_postings DROP CONSTRAINT gm_postings_pkey",
    "ALTER TABLE gm_postings DROP COLUMN positions",
    "ALTER TABLE gm_postings ADD PRIMARY KEY (term, agent_id, fact_id)"
    " INCLUDE (tf, doc_len, created_at, confidence)",
    "CREATE INDEX gm_facts_tsv ON gm_facts USING gin (tsv)",
    "DROP INDEX gm_vectors_hnsw",
    "CREATE INDEX gm_vectors_hnsw ON gm_vectors USING hnsw ((embedding::vector(8)) vector_cosine_ops)",
    "UPDATE gm_meta SET value = '3' WHERE key = 'schema_version'",
]


def _facts() -> list[Fact]:
    rng = random.Random(4)
    start = datetime(2026, 2, 1, tzinfo=UTC)
    out = []
    for i in range(300):
        moment = start + timedelta(minutes=i)
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        session = Provenance(session=rng.choice([None, "s"]))
        out.append(Fact(id=new_ulid(), agent_id=rng.choice("ab"), text=text, created_at=moment,
                        accessed_at=moment, provenance=session))  # fmt: skip
    return out


def _indexes(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'gm_%'"
        ).fetchall()
    return dict(rows)


def test_schema_3_database_migrates_keeping_every_fact_and_its_ranking(pg_dsn: str, tmp_path: Path) -> None:
    facts = _facts()
    rng = random.Random(9)
    vectors = {f.id: [rng.uniform(-1, 1) for _ in range(8)] for f in facts}
    lite = SQLiteStore(tmp_path / "lite")
    old = PostgresStore(pg_dsn)
    for store in (old, lite):
        store.add_facts(facts)
        store.supersede([f.id for f in facts[:15]], "retired")
        store.reset_embeddings("hash-8")
        store.set_vectors(vectors.items(), "hash-8")
    old.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in TO_SCHEMA_3:
            conn.execute(statement)
        postings = conn.execute("SELECT count(*) FROM gm_postings").fetchone()
    assert "gm_facts_tsv" in _indexes(pg_dsn)

    store = PostgresStore(pg_dsn)  # opening migrates
    try:
        with psycopg.connect(pg_dsn) as conn:
            version = conn.execute("SELECT value FROM gm_meta WHERE key = 'schema_version'").fetchone()
            assert version == (str(SCHEMA_VERSION),)
            assert conn.execute("SELECT count(*) FROM gm_postings").fetchone() == postings
            assert conn.execute("SELECT count(*) FROM gm_postings WHERE positions IS NULL").fetchone() == (0,)
        indexes = _indexes(pg_dsn)
        assert "gm_facts_tsv" not in indexes
        assert "halfvec(8)" in indexes["gm_vectors_hnsw"]
        assert store.list_facts(None, kinds=("fact", "alias")) == lite.list_facts(
            None, kinds=("fact", "alias")
        )
        for terms in (["cooker"], ["slow cooker"], ["coconut ice", "cream"], ["o'reilly"], ["naive cafe"]):
            for agents in (["a"], ["a", "b"]):
                pg_hits = [(h.fact_id, h.score) for h in store.keyword_search(agents, terms, 50)]
                assert pg_hits == [(h.fact_id, h.score) for h in lite.keyword_search(agents, terms, 50)], (
                    terms
                )
        query = [0.3, -0.1, 0.8, 0.2, -0.5, 0.1, 0.0, 0.4]
        pg_near = store.vector_search(["a", "b"], query, "hash-8", 10)
        assert [h.fact_id for h in pg_near] == [
            h.fact_id for h in lite.vector_search(["a", "b"], query, "hash-8", 10)
        ]
        fresh = Fact(id=new_ulid(), agent_id="a", text="slow cooker", created_at=datetime.now(UTC),
                     accessed_at=datetime.now(UTC))  # fmt: skip
        for target in (store, lite):
            target.add_facts([fresh])
        assert [h.fact_id for h in store.keyword_search(["a"], ["slow cooker"], 50)] == [
            h.fact_id for h in lite.keyword_search(["a"], ["slow cooker"], 50)
        ]
    finally:
        store.close()
        lite.close()


def _changes(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT sum(changes) FROM gm_fts_stats").fetchone()
    assert row is not None
    return int(row[0])


def test_schema_4_database_migrates_and_counts_every_writers_changes(pg_dsn: str, tmp_path: Path) -> None:
    facts = _facts()
    old = PostgresStore(pg_dsn)
    old.add_facts(facts[:200])
    old.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in [*TO_SCHEMA_4, "UPDATE gm_meta SET value = '4' WHERE key = 'schema_version'"]:
            conn.execute(statement)
    lite = SQLiteStore(tmp_path / "lite")
    store = PostgresStore(pg_dsn)  # opening migrates
    try:
        lite.add_facts(facts[:200])
        assert store.list_facts(None) == lite.list_facts(None)
        before = _changes(pg_dsn)
        store.add_facts(facts[200:250])
        assert _changes(pg_dsn) == before + 1  # one batch, one update of one statistics row
        with psycopg.connect(pg_dsn, autocommit=True) as conn:  # what a server of schema 4 writes
            conn.execute("UPDATE gm_fts_stats SET docs = docs + 1, tokens = tokens + 3 WHERE shard = 5")
            conn.execute("UPDATE gm_fts_stats SET docs = docs - 1, tokens = tokens - 3 WHERE shard = 5")
        assert _changes(pg_dsn) == before + 3
        store.supersede([facts[0].id], "retired")
        assert _changes(pg_dsn) == before + 4
    finally:
        store.close()
        lite.close()
