"""PostgreSQL + pgvector store: the team backend behind the same ``Store`` protocol as SQLite.

Many graymatter servers can share one database: every write is one transaction on a pooled connection,
a revision is a compare-and-swap (``replace_facts`` locks its targets ``FOR UPDATE`` and stores the
replacement only if they are all still live, so two servers revising the same fact never both succeed;
ADR 0012), and nothing is cached in process that another server could make stale, except what one recall
read for its own later calls (``recall.py``, ADR 0018: dropped by the next recall, any write, any other
read, and after a second).

Ranking parity with the SQLite store
------------------------------------
The keyword signal must rank exactly like SQLite's FTS5 ``bm25()``. So this backend does not use a
PostgreSQL text-search dictionary at all: text is tokenised and Porter-stemmed by SQLite's own FTS5
``porter unicode61 remove_diacritics 2`` tokenizer, run in process on an in-memory SQLite database.
The stems are stored with the fact, in one transaction:

* as rows of ``gm_postings`` (stem, agent, fact, term count, document length, token positions), a
  covering B-tree that scores words and phrases (adjacent stems, by their positions) in one statement
  without touching the facts table (ADR 0018);
* as a ``tsvector`` column of the fact, which says which postings to remove when the fact is retired.

The score is FTS5's BM25 (k1 = 1.2, b = 0.75, idf floor 1e-6, summed in query-term order with FTS5's
floating-point operation order, so scores are bit-identical) over corpus statistics that every write
keeps transactionally up to date: ``gm_terms`` document frequencies and ``gm_fts_stats`` totals, both
sharded 16 ways so that concurrent writers rarely wait on the same counter row. Like FTS5, statistics
cover live facts of every namespace. Known bound: phrase matching sees at most 256 positions per stem
and positions up to 16,383 (PostgreSQL's tsvector limits), which only matters for facts of many
thousand words.

Vectors live in ``gm_vectors`` (pgvector, cosine) with an HNSW graph over half-precision copies built
for the dimension of the current embedding model; searches use pgvector's iterative index scan in strict
order so that namespace and confidence filters do not starve the result list, and re-rank a margin of
candidates in full precision. Unlike SQLite's exact numpy scan this is an approximate search: pgvector
stops after ``hnsw.max_scan_tuples`` (20,000) candidates, so a namespace holding a tiny share of a very
large store can get fewer than ``limit`` vector candidates (keyword and recency candidates are
unaffected).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from graymatter.store.decay import SharedDecay
from graymatter.store.fts import FtsTokenizer
from graymatter.store.postgres import schema
from graymatter.store.postgres.connection import PostgresConnections
from graymatter.store.postgres.facts import PostgresFactWrites
from graymatter.store.postgres.recall import PostgresRecallReads
from graymatter.store.postgres.rows import DIALECT, one
from graymatter.store.postgres.tokens import PostgresTokenStore
from graymatter.store.tokens import TokenStore

if TYPE_CHECKING:
    import psycopg

    from graymatter.store.base import Store


class PostgresStore(PostgresFactWrites, PostgresRecallReads, SharedDecay):
    """The PostgreSQL backend. Thread-safe; one connection pool per store."""

    kind = "postgresql"
    _dialect = DIALECT

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0) -> None:
        self.data_dir: Path | None = None
        self._tokenizer = FtsTokenizer()
        self._defer_index = False
        self._init_recall_reads()
        PostgresConnections.__init__(self, url, min_size=min_size, max_size=max_size, timeout=timeout)
        try:
            schema.migrate(self)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def token_store(self) -> TokenStore:
        """The scoped tokens of this store: its ``gm_tokens`` table (shared by every server)."""
        return PostgresTokenStore(self._read, self._write)

    def compact(self) -> tuple[int, int]:
        """``VACUUM (ANALYZE)`` of every graymatter table: the space of dead rows (superseded postings,
        pruned facts, old counters) becomes reusable, empty pages at a table's end go back to the file
        system, and planner statistics are fresh. Tables are not rewritten: ``VACUUM FULL`` would lock every
        client out meanwhile, a decision for the database's administrator; so the size may stay the same.
        Returns the tables' bytes (indexes and TOAST included) before and after."""
        before = self._read(_tables_bytes)
        tables = [row[0] for row in self._read(lambda c: c.execute(_GM_TABLES).fetchall())]
        # not in a transaction (VACUUM refuses one): the pool's connections are in autocommit, and a repeat
        # after a lost connection is harmless
        vacuum = "VACUUM (ANALYZE) " + ", ".join(f'"{name}"' for name in tables)
        self._read(lambda c: c.execute(vacuum))
        return before, self._read(_tables_bytes)

    # -- counters ----------------------------------------------------------------------------------
    def bump_write_counter(self, agent_id: str, by: int = 1) -> int:
        """Atomically add ``by`` to the agent's writes-since-consolidation counter; return the new value."""
        row = self._bookkeeping_write(
            lambda c: c.execute(
                "INSERT INTO gm_counters (agent_id, writes) VALUES (%s, %s) ON CONFLICT (agent_id) "
                "DO UPDATE SET writes = gm_counters.writes + EXCLUDED.writes RETURNING writes",
                (agent_id, by),
            ).fetchone()
        )
        return int(one(row)[0])

    def reset_write_counter(self, agent_id: str) -> None:
        """Zero the agent's writes-since-consolidation counter."""
        self._bookkeeping_write(
            lambda c: c.execute("DELETE FROM gm_counters WHERE agent_id = %s", (agent_id,))
        )


_OUR_TABLES = (
    "FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'gm\\_%' "
    "AND c.relnamespace = current_schema()::regnamespace"
)
"""The graymatter tables of the store's schema (a ``FROM ... WHERE`` over ``pg_class c``)."""
_GM_TABLES = f"SELECT c.relname {_OUR_TABLES} ORDER BY 1"
_GM_BYTES = f"SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) {_OUR_TABLES}"


def _tables_bytes(c: psycopg.Connection[Any]) -> int:
    """Bytes on disk of the graymatter tables, their indexes and TOAST included."""
    return int(one(c.execute(_GM_BYTES).fetchone())[0])


if TYPE_CHECKING:

    def _implements_store(store: PostgresStore) -> Store:
        """The type checker proves here that the backend implements the whole ``Store`` protocol."""
        return store
