"""The bulk write path: a fact's postings (derived by the server from its tsvector, or copied for a fact
whose term counts the tsvector cannot hold) are exactly the stems, counts and positions FTS5 sees; the
facts COPY streamed in pieces stores every fact once; vectors copied in binary come back as written."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from graymatter.errors import InvalidInput
from graymatter.ids import new_ulid
from graymatter.models import Fact
from graymatter.store.fts import FtsTokenizer
from graymatter.store.postgres import fulltext
from graymatter.store.postgres.store import PostgresStore
from graymatter.store.sqlite import SQLiteStore

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

_clock = itertools.count()
LONG = "q" * 3000  # a stem over PostgreSQL's 2,046-byte lexeme limit: stored clipped
EDGE_TEXTS = {
    "plain": "The payments team deploys the billing service on Tuesdays",
    "repeats": " ".join(["deploy"] * 300 + ["rollback"]),  # more than 256 positions of one stem
    "far": " ".join(["filler"] * 16390 + ["beacon", "beacon"]),  # positions past 16,383
    "long stem": f"{'w' * 600} short",  # longer than the fast path's bound, not clipped
    "clipped": f"{LONG}a {LONG}b tail",  # two stems clipped to one lexeme: counts merge
    "escapes": "path C:\\temp\\new has a tab\there and a\nnewline, 'quoted' text",
}


def make_fact(text: str, agent: str = "a", confidence: str = "inferred") -> Fact:
    moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=next(_clock))
    return Fact(id=new_ulid(), agent_id=agent, text=text, created_at=moment, accessed_at=moment,
                confidence=confidence)  # fmt: skip


def expected_postings(text: str) -> dict[str, tuple[int, list[int]]]:
    """Per stored lexeme: FTS5's term count and the positions a tsvector keeps (spelled out here)."""
    places, _ = FtsTokenizer().analyse([text])[0]
    counts: Counter[str] = Counter()
    merged: dict[str, set[int]] = {}
    for stem, where in places.items():
        lexeme = stem.encode()[:2046].decode(errors="ignore")
        counts[lexeme] += len(where)
        merged.setdefault(lexeme, set()).update(min(p, 16383) for p in where)
    return {lexeme: (counts[lexeme], sorted(merged[lexeme])[:256]) for lexeme in counts}


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_dsn) as opened:
        yield opened


def postings_of(dsn: str, fact_id: str) -> dict[str, tuple[int, list[int]]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT term, tf, positions FROM gm_postings WHERE fact_id = %s", (fact_id,)
        ).fetchall()
    return {term: (tf, list(positions)) for term, tf, positions in rows}


def test_edge_case_postings_hold_fts5_counts_and_tsvector_positions(
    store: PostgresStore, pg_dsn: str
) -> None:
    facts = {label: make_fact(text) for label, text in EDGE_TEXTS.items()}
    store.add_facts(list(facts.values()))
    for label, fact in facts.items():
        assert postings_of(pg_dsn, fact.id) == expected_postings(fact.text), label
    with psycopg.connect(pg_dsn) as conn:
        shapes = conn.execute(
            "SELECT p.fact_id, bool_and(p.agent_id = f.agent_id AND p.doc_len = f.doc_len"
            " AND p.created_at = f.created_at AND p.confidence = f.confidence), count(*)"
            " FROM gm_postings p JOIN gm_facts f ON f.id = p.fact_id GROUP BY p.fact_id"
        ).fetchall()
        stored = dict(conn.execute("SELECT id, text FROM gm_facts").fetchall())
    assert {fact_id: ok for fact_id, ok, _ in shapes} == {f.id: True for f in facts.values()}
    assert stored == {f.id: f.text for f in facts.values()}  # tabs, newlines and backslashes survive COPY


def test_edge_case_scores_match_sqlite(store: PostgresStore, tmp_path: Path) -> None:
    facts = [make_fact(text) for text in EDGE_TEXTS.values()]
    with SQLiteStore(tmp_path / "lite") as lite:
        for backend in (store, lite):
            backend.add_facts(facts)
        for terms in (["deploy"], ["rollback"], ["beacon"], ["filler", "beacon"], ["short"], ["tail"]):
            pg_hits = store.keyword_search(["a"], terms, 10)
            lite_hits = lite.keyword_search(["a"], terms, 10)
            assert [(h.fact_id, h.score) for h in pg_hits] == [(h.fact_id, h.score) for h in lite_hits], terms


def test_a_batch_larger_than_a_piece_is_stored_once_with_its_statistics(
    store: PostgresStore, pg_dsn: str
) -> None:
    texts = [f"note {n} about service{n % 7} and owner{n % 11}" for n in range(2 * fulltext.PIECE + 17)]
    facts = [make_fact(text, agent="ab"[n % 2]) for n, text in enumerate(texts)]
    facts.append(make_fact("an alias is never indexed").model_copy(update={"kind": "alias"}))
    store.add_facts(facts)
    stems = [set(FtsTokenizer().analyse([t])[0][0]) for t in texts]
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM gm_facts").fetchone() == (len(facts),)
        assert conn.execute("SELECT count(*) FROM gm_postings").fetchone() == (sum(map(len, stems)),)
        assert conn.execute("SELECT sum(docs) FROM gm_fts_stats").fetchone() == (len(texts),)
        frequencies = dict(conn.execute("SELECT term, sum(df)::int FROM gm_terms GROUP BY term").fetchall())
    assert frequencies == dict(Counter(stem for found in stems for stem in found))


def test_vectors_copied_in_binary_come_back_unit_length(store: PostgresStore, pg_dsn: str) -> None:
    facts = [make_fact(f"vector fact {n}", confidence=c) for n, c in zip(range(6), itertools.cycle(
        ["verified", "inferred", "unverified"]), strict=False)]  # fmt: skip
    raw = [[float(n + 1), -2.0, 0.5 * n, math.inf if n == 4 else 1.0] for n in range(6)]
    raw[5] = [0.0, 0.0, 0.0, 0.0]
    store.reset_embeddings("m-4")
    store.add_facts(facts, raw, "m-4")
    with psycopg.connect(pg_dsn) as conn:
        query = "SELECT fact_id, agent_id, confidence, embedding::text FROM gm_vectors"
        rows = conn.execute(query).fetchall()
    got = {
        fid: (agent, conf, [float(x) for x in vec.strip("[]").split(",")]) for fid, agent, conf, vec in rows
    }
    for fact, vector in zip(facts, raw, strict=True):
        clean = [v if math.isfinite(v) else 0.0 for v in vector]
        norm = math.sqrt(sum(v * v for v in clean)) or 1.0
        agent, confidence, stored = got[fact.id]
        assert (agent, confidence) == (fact.agent_id, fact.confidence)
        assert stored == pytest.approx([v / norm for v in clean], abs=1e-6)


def test_a_bad_fact_in_a_later_piece_stores_nothing(store: PostgresStore, pg_dsn: str) -> None:
    facts = [make_fact(f"piece fact {n}") for n in range(fulltext.PIECE + 3)]
    facts[-1] = make_fact("a NUL \x00 inside")
    with pytest.raises(InvalidInput, match="NUL"):
        store.add_facts(facts, [[1.0, float(n)] for n in range(len(facts))], None)
    with psycopg.connect(pg_dsn) as conn:
        for table in ("gm_facts", "gm_postings", "gm_vectors", "gm_terms"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
        assert conn.execute("SELECT sum(docs), sum(tokens) FROM gm_fts_stats").fetchone() == (0, 0)
    store.add_facts(facts[:-1])  # the connection is usable again and the batch goes in without it
    assert len(store.keyword_search(["a"], ["piece"], 1_000)) == fulltext.PIECE + 2
