"""PostgreSQL + pgvector store: the team backend behind the same ``Store`` protocol as SQLite.

Many graymatter servers can share one database: every write is one transaction on a pooled connection,
tombstoning is a conditional ``UPDATE ... WHERE superseded_by IS NULL`` (so two servers revising the same
fact never both succeed), and nothing is cached in process that another server could make stale.

Ranking parity with the SQLite store
------------------------------------
The keyword signal must rank exactly like SQLite's FTS5 ``bm25()``. So this backend does not use a
PostgreSQL text-search dictionary at all: text is tokenised and Porter-stemmed by SQLite's own FTS5
``porter unicode61 remove_diacritics 2`` tokenizer, run in process on an in-memory SQLite database.
The stems are stored twice, in one transaction with the fact:

* as a ``tsvector`` with token positions and a GIN index, which answers phrase terms (adjacent stems);
* as rows of ``gm_postings`` (stem, agent, fact, term count, document length), a covering B-tree that
  scores single-word terms without touching the facts table.

The score is FTS5's BM25 (k1 = 1.2, b = 0.75, idf floor 1e-6, summed in query-term order with FTS5's
floating-point operation order, so scores are bit-identical) over corpus statistics that every write
keeps transactionally up to date: ``gm_terms`` document frequencies and ``gm_fts_stats`` totals, both
sharded 16 ways so that concurrent writers rarely wait on the same counter row. Like FTS5, statistics
cover live facts of every namespace. Known bound: phrase matching sees at most 256 positions per stem
and positions up to 16,383 (PostgreSQL's tsvector limits), which only matters for facts of many
thousand words.

Vectors live in ``gm_vectors`` (pgvector, cosine) with an HNSW index built for the dimension of the
current embedding model; searches use pgvector's iterative index scan in strict order so that namespace
and confidence filters do not starve the result list. Unlike SQLite's exact numpy scan this is an
approximate search: pgvector stops after ``hnsw.max_scan_tuples`` (20,000) candidates, so a namespace
holding a tiny share of a very large store can get fewer than ``limit`` vector candidates (keyword and
recency candidates are unaffected).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql as pgsql
from psycopg_pool import ConnectionPool, PoolTimeout

from graymatter.errors import CorruptRecord, InvalidInput, SchemaTooNew, StorageError, StoreUnavailable
from graymatter.models import Checkpoint, Fact, Link, MemoryStats, Provenance
from graymatter.store.base import ScoredId, Vector

T = TypeVar("T")

SCHEMA_VERSION = 1
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
STAT_SHARDS = 16
MAX_TERM_COUNT = 256  # PostgreSQL keeps at most 256 positions per lexeme
MAX_POSITION = 16383  # and positions up to 16383
MAX_LEXEME_BYTES = 2046  # PostgreSQL's limit on one lexeme is 2 KiB
BM25_K1 = 1.2
BM25_B = 0.75
_MIGRATION_LOCK = 0x67726179  # "gray": advisory lock serialising schema creation across servers
_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock detected
_EMBED_NONE, _EMBED_PENDING, _EMBED_DONE = 0, 1, 2

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE EXTENSION IF NOT EXISTS vector",
        """CREATE TABLE IF NOT EXISTS gm_meta (key text PRIMARY KEY, value text NOT NULL)""",
        """CREATE TABLE gm_facts (
            seq bigserial UNIQUE,
            id text PRIMARY KEY,
            agent_id text NOT NULL,
            text text NOT NULL,
            kind text NOT NULL DEFAULT 'fact',
            equivalents text,
            created_at timestamptz NOT NULL,
            accessed_at timestamptz NOT NULL,
            access_count integer NOT NULL DEFAULT 0,
            weight double precision NOT NULL DEFAULT 1.0,
            superseded_by text,
            pinned boolean NOT NULL DEFAULT false,
            pinned_at timestamptz,
            confidence text NOT NULL DEFAULT 'inferred',
            provenance text NOT NULL DEFAULT '{}',
            embed_state smallint NOT NULL DEFAULT 0,
            tsv tsvector,
            doc_len integer NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX gm_facts_tsv ON gm_facts USING gin (tsv)",
        """CREATE INDEX gm_facts_live_recent ON gm_facts (agent_id, created_at DESC, id)
           WHERE superseded_by IS NULL AND kind = 'fact'""",
        """CREATE INDEX gm_facts_live_sequence ON gm_facts (agent_id, created_at, id)
           WHERE superseded_by IS NULL AND kind = 'fact'""",
        "CREATE INDEX gm_facts_agent_text ON gm_facts (agent_id, md5(text))",
        "CREATE INDEX gm_facts_agent_kind ON gm_facts (agent_id, kind, created_at, id)",
        "CREATE INDEX gm_facts_created ON gm_facts (created_at, id)",
        "CREATE INDEX gm_facts_pending ON gm_facts (seq) WHERE embed_state = 1",
        "CREATE INDEX gm_facts_superseded_by ON gm_facts (superseded_by) WHERE superseded_by IS NOT NULL",
        """CREATE TABLE gm_terms (
            term text NOT NULL,
            shard smallint NOT NULL,
            df bigint NOT NULL,
            PRIMARY KEY (term, shard)
        )""",
        """CREATE TABLE gm_postings (
            term text NOT NULL,
            agent_id text NOT NULL,
            fact_id text NOT NULL,
            tf integer NOT NULL,
            doc_len integer NOT NULL,
            created_at timestamptz NOT NULL,
            confidence text NOT NULL,
            PRIMARY KEY (term, agent_id, fact_id) INCLUDE (tf, doc_len, created_at, confidence)
        )""",
        """CREATE TABLE gm_fts_stats (
            shard smallint PRIMARY KEY,
            docs bigint NOT NULL DEFAULT 0,
            tokens bigint NOT NULL DEFAULT 0
        )""",
        f"INSERT INTO gm_fts_stats (shard) SELECT generate_series(0, {STAT_SHARDS - 1})",
        """CREATE TABLE gm_vectors (
            fact_id text PRIMARY KEY REFERENCES gm_facts(id) ON DELETE CASCADE,
            agent_id text NOT NULL,
            confidence text NOT NULL,
            embedding vector NOT NULL
        )""",
        "CREATE INDEX gm_vectors_agent ON gm_vectors (agent_id)",
        """CREATE TABLE gm_checkpoints (
            seq bigserial UNIQUE,
            id text PRIMARY KEY,
            agent_id text NOT NULL,
            created_at timestamptz NOT NULL,
            state text NOT NULL,
            messages text,
            message_count integer NOT NULL DEFAULT 0,
            metadata text NOT NULL DEFAULT '{}',
            provenance text NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX gm_checkpoints_agent ON gm_checkpoints (agent_id, created_at DESC, id DESC)",
        "CREATE INDEX gm_checkpoints_created ON gm_checkpoints (created_at DESC, id DESC)",
        """CREATE TABLE gm_links (
            id text PRIMARY KEY,
            agent_id text NOT NULL,
            source text NOT NULL,
            target text NOT NULL,
            relation text NOT NULL,
            created_at timestamptz NOT NULL,
            provenance text NOT NULL DEFAULT '{}',
            UNIQUE (agent_id, source, target, relation)
        )""",
        """CREATE TABLE gm_counters (agent_id text PRIMARY KEY, writes bigint NOT NULL DEFAULT 0)""",
        """CREATE TABLE gm_tokens (
            id text PRIMARY KEY,
            label text NOT NULL DEFAULT '',
            agents text[] NOT NULL,
            access text NOT NULL CHECK (access IN ('read', 'read-write')),
            created_at timestamptz NOT NULL,
            revoked_at timestamptz,
            token_hash text NOT NULL
        )""",
    ],
}


def redact_url(url: str) -> str:
    """The URL without its password (safe for logs, errors and ``Store.url``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://(unparseable URL)"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[-1]}"))


# ----------------------------------------------------------------------------------------- tokenizer


class FtsTokenizer:
    """SQLite FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, run in process.

    Using SQLite's own tokenizer (not a PostgreSQL dictionary) is what makes keyword ranking identical
    on both backends. One in-memory SQLite connection per thread.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(f"CREATE VIRTUAL TABLE tok USING fts5(t, tokenize='{FTS_TOKENIZER}')")
            conn.execute("CREATE VIRTUAL TABLE tok_vocab USING fts5vocab(tok, 'instance')")
            self._local.conn = conn
        return conn

    def analyse(self, texts: Sequence[str]) -> list[tuple[dict[str, list[int]], int]]:
        """For each text: ``(stem -> 1-based token positions, number of tokens)``, stems in text order."""
        if not texts:
            return []
        conn = self._conn()
        out: list[tuple[dict[str, list[int]], int]] = [({}, 0) for _ in texts]
        totals = [0] * len(texts)
        conn.execute("BEGIN")
        try:
            conn.executemany(
                "INSERT INTO tok(rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)]
            )
            for term, doc, offset in conn.execute(
                'SELECT term, doc, "offset" FROM tok_vocab ORDER BY doc, "offset"'
            ):
                out[doc - 1][0].setdefault(term, []).append(offset + 1)
                totals[doc - 1] += 1
        finally:
            conn.execute("ROLLBACK")
        return [(positions, total) for (positions, _), total in zip(out, totals, strict=True)]


def _clip_lexeme(lexeme: str) -> str:
    raw = lexeme.encode()
    if len(raw) <= MAX_LEXEME_BYTES:
        return lexeme
    return raw[:MAX_LEXEME_BYTES].decode(errors="ignore")


def _quote_lexeme(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(positions: dict[str, list[int]]) -> str:
    """A ``tsvector`` input literal: each stem with its token positions (PostgreSQL keeps <= 256 each)."""
    merged: dict[str, list[int]] = {}
    for stem, places in positions.items():
        merged.setdefault(_clip_lexeme(stem), []).extend(places)
    parts = []
    for stem in sorted(merged):
        places = sorted({min(p, MAX_POSITION) for p in merged[stem]})[:MAX_TERM_COUNT]
        parts.append(_quote_lexeme(stem) + ":" + ",".join(str(p) for p in places))
    return " ".join(parts)


def tsquery_phrase(stems: Sequence[str]) -> str:
    """A ``tsquery`` input literal matching the stems as adjacent tokens, in order."""
    return " <-> ".join(_quote_lexeme(_clip_lexeme(s)) for s in stems)


def tsquery_literal(stems: Iterable[str]) -> str:
    """A ``tsquery`` input literal OR-ing the stems (each quoted: no input becomes query syntax)."""
    return " | ".join(_quote_lexeme(_clip_lexeme(s)) for s in stems)


def _unit(vector: Vector) -> list[float]:
    """The vector scaled to unit length (zero or non-finite vectors are stored as they are, finite)."""
    values = [float(v) if math.isfinite(float(v)) else 0.0 for v in vector]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values] if norm > 0 else values


def _vector_literal(vector: Vector) -> str:
    values = [float(v) for v in vector]
    norm = math.sqrt(sum(v * v for v in values))
    if norm > 0 and math.isfinite(norm):
        values = [v / norm for v in values]
    return "[" + ",".join(repr(v) if math.isfinite(v) else "0" for v in values) + "]"


# ----------------------------------------------------------------------------------------- store


class PostgresStore:
    """The PostgreSQL backend. Thread-safe; one connection pool per store."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0) -> None:
        self._dsn = url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url
        self.url = redact_url(self._dsn)
        self.data_dir: Path | None = None
        self._tokenizer = FtsTokenizer()
        self._closed = False
        self._defer_index = False
        try:  # one direct attempt first: a wrong URL fails fast, with the server's reason, on one line
            psycopg.connect(self._dsn, connect_timeout=max(1, int(timeout)), autocommit=True).close()
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to PostgreSQL at {self.url}: {_brief(exc)}") from None
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)  # pool reconnect chatter is not for users
        try:
            self.pool = ConnectionPool(
                self._dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                kwargs={"autocommit": True},
                open=False,
                name="graymatter",
            )
            self.pool.open(wait=True, timeout=timeout)
        except PoolTimeout:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {self.url} within {timeout:.0f} s; check the URL, "
                "that the server is running and that it accepts this user"
            ) from None
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to PostgreSQL at {self.url}: {_brief(exc)}") from None
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the pool (waits for connections in use to be returned). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ping(self) -> None:
        """Round-trip the database (readiness probe); raises StoreUnavailable when it does not answer."""
        self._read(lambda c: c.execute("SELECT 1 FROM gm_meta LIMIT 1").fetchall())

    # -- schema ------------------------------------------------------------------------------------
    def _migrate(self) -> None:
        def current(c: psycopg.Connection[Any]) -> int:
            exists = c.execute("SELECT to_regclass('gm_meta') IS NOT NULL").fetchone()[0]
            if not exists:
                return 0
            row = c.execute("SELECT value FROM gm_meta WHERE key = 'schema_version'").fetchone()
            return int(row[0]) if row else 0

        version = self._read(current)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"database {self.url} was written by a newer graymatter (schema {version}, this version "
                f"reads up to {SCHEMA_VERSION}); upgrade graymatter. The database was not modified."
            )
        if version == SCHEMA_VERSION:
            return

        def apply(c: psycopg.Connection[Any]) -> None:
            c.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            now = current(c)
            if now > SCHEMA_VERSION:
                raise SchemaTooNew(f"database {self.url} was upgraded by a newer graymatter meanwhile")
            for step in range(now + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[step]:
                    c.execute(statement)
                c.execute(
                    "INSERT INTO gm_meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (str(step),),
                )

        try:
            self._write(apply)
        except StorageError as exc:
            if "extension" in exc.message and "vector" in exc.message:
                raise StoreUnavailable(
                    f"the pgvector extension is missing in {self.url} and this user cannot create it; "
                    "ask the database owner to run CREATE EXTENSION vector"
                ) from None
            raise

    # -- transaction helpers -----------------------------------------------------------------------
    def _run(self, work: Callable[[psycopg.Connection[Any]], T], *, write: bool) -> T:
        if self._closed:
            raise StorageError("the store is closed")
        attempts = 0
        while True:
            attempts += 1
            try:
                with self.pool.connection() as conn:
                    if write:
                        with conn.transaction():
                            return work(conn)
                    return work(conn)
            except PoolTimeout:
                raise StoreUnavailable(
                    f"no PostgreSQL connection available from {self.url} (pool timeout)"
                ) from None
            except psycopg.OperationalError as exc:
                if exc.sqlstate in _RETRYABLE_SQLSTATES and attempts < 8:
                    time.sleep(0.005 * attempts * (0.5 + random.random()))
                    continue
                if exc.sqlstate is None and attempts < 3 and not write:
                    continue  # a read on a lost connection is safe to repeat; a write's commit is uncertain
                raise StoreUnavailable(f"PostgreSQL at {self.url} failed: {_brief(exc)}") from None
            except psycopg.errors.DataError as exc:
                raise InvalidInput(f"value refused by PostgreSQL: {_brief(exc)}") from None
            except psycopg.Error as exc:
                if exc.sqlstate in _RETRYABLE_SQLSTATES and attempts < 8:
                    time.sleep(0.005 * attempts * (0.5 + random.random()))
                    continue
                raise StorageError(f"PostgreSQL at {self.url} failed: {_brief(exc)}") from None

    def _write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        return self._run(work, write=True)

    def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        return self._run(work, write=False)

    # -- row decoding ------------------------------------------------------------------------------
    _FACT_COLUMNS = (
        "id, agent_id, text, kind, equivalents, created_at, accessed_at, access_count, weight, "
        "superseded_by, pinned, pinned_at, confidence, provenance"
    )

    @staticmethod
    def _fact(row: Sequence[Any]) -> Fact:
        try:
            return Fact(
                id=row[0], agent_id=row[1], text=row[2], kind=row[3],
                equivalents=json.loads(row[4]) if row[4] else [],
                created_at=_utc(row[5]), accessed_at=_utc(row[6]), access_count=row[7],
                weight=min(1.0, max(0.0, row[8])), superseded_by=row[9], pinned=bool(row[10]),
                pinned_at=_utc(row[11]), confidence=row[12],
                provenance=Provenance.model_validate_json(row[13] or "{}"),
            )  # fmt: skip
        except (ValueError, TypeError) as exc:
            raise CorruptRecord(f"fact {row[0]} cannot be decoded: {type(exc).__name__}") from None

    @staticmethod
    def _checkpoint(row: Sequence[Any]) -> Checkpoint:
        try:
            return Checkpoint(
                id=row[0], agent_id=row[1], created_at=_utc(row[2]), message_count=row[3],
                state=json.loads(row[4]),
                messages=json.loads(row[5]) if row[5] is not None else None,
                metadata=json.loads(row[6] or "{}"),
                provenance=Provenance.model_validate_json(row[7] or "{}"),
            )  # fmt: skip
        except (ValueError, TypeError) as exc:
            raise CorruptRecord(
                f"checkpoint {row[0]} of agent {row[1]!r} cannot be decoded ({type(exc).__name__})"
            ) from None

    @staticmethod
    def _link(row: Sequence[Any]) -> Link:
        try:
            return Link(
                id=row[0], agent_id=row[1], source=row[2], target=row[3], relation=row[4],
                created_at=_utc(row[5]),
                provenance=Provenance.model_validate_json(row[6] or "{}"),
            )  # fmt: skip
        except (ValueError, TypeError) as exc:
            raise CorruptRecord(f"link {row[0]} cannot be decoded: {type(exc).__name__}") from None

    # -- full-text bookkeeping ---------------------------------------------------------------------
    @staticmethod
    def _adjust_stats(c: psycopg.Connection[Any], terms: Counter[str], docs: int, tokens: int) -> None:
        """Add (or subtract) document frequencies and totals, on one random shard, in lock order."""
        if not docs:
            return
        shard = random.randrange(STAT_SHARDS)
        items = sorted((term, df) for term, df in terms.items() if df)
        if items:
            c.execute(
                "INSERT INTO gm_terms (term, shard, df) SELECT t, %s, d"
                " FROM unnest(%s::text[], %s::bigint[]) AS u(t, d) ORDER BY t"
                " ON CONFLICT (term, shard) DO UPDATE SET df = gm_terms.df + EXCLUDED.df",
                (shard, [t for t, _ in items], [d for _, d in items]),
            )
        c.execute(
            "UPDATE gm_fts_stats SET docs = docs + %s, tokens = tokens + %s WHERE shard = %s",
            (docs, tokens, shard),
        )

    def _unindex(self, c: psycopg.Connection[Any], fact_ids: Sequence[str]) -> None:
        """Remove the full-text entries of the given (locked) facts and their vectors."""
        if not fact_ids:
            return
        rows = c.execute(
            "SELECT id, agent_id, tsvector_to_array(tsv), doc_len FROM gm_facts"
            " WHERE id = ANY(%s) AND tsv IS NOT NULL",
            (list(fact_ids),),
        ).fetchall()
        terms: Counter[str] = Counter()
        tokens = 0
        postings: list[tuple[str, str, str]] = []
        for fact_id, agent_id, lexemes, doc_len in rows:
            for lexeme in lexemes:
                terms[lexeme] -= 1
                postings.append((lexeme, agent_id, fact_id))
            tokens -= doc_len
        postings.sort()
        c.execute(
            "DELETE FROM gm_postings p USING unnest(%s::text[], %s::text[], %s::text[]) AS u(t, a, f)"
            " WHERE p.term = u.t AND p.agent_id = u.a AND p.fact_id = u.f",
            ([p[0] for p in postings], [p[1] for p in postings], [p[2] for p in postings]),
        )
        c.execute(
            "UPDATE gm_facts SET tsv = NULL, doc_len = 0 WHERE id = ANY(%s) AND tsv IS NOT NULL",
            (list(fact_ids),),
        )
        c.execute("DELETE FROM gm_vectors WHERE fact_id = ANY(%s)", (list(fact_ids),))
        self._adjust_stats(c, terms, -len(rows), tokens)

    # -- facts -------------------------------------------------------------------------------------
    def _current_model(self, c: psycopg.Connection[Any]) -> str | None:
        row = c.execute("SELECT value FROM gm_meta WHERE key = 'embedding_model'").fetchone()
        return row[0] if row else None

    def _insert_facts(self, c: psycopg.Connection[Any], facts: Sequence[Fact], states: Sequence[int]) -> None:
        indexed = [f for f in facts if f.kind == "fact" and f.superseded_by is None]
        analysis = dict(
            zip((f.id for f in indexed), self._tokenizer.analyse([f.text for f in indexed]), strict=True)
        )
        terms: Counter[str] = Counter()
        tokens = 0
        rows = []
        postings: list[tuple[str, str, str, int, int, datetime, str]] = []
        for fact, state in zip(facts, states, strict=True):
            if "\x00" in fact.text:
                raise InvalidInput("fact text contains a NUL character, which PostgreSQL cannot store")
            found = analysis.get(fact.id)
            tsv = None
            doc_len = 0
            if found is not None:
                places, doc_len = found
                tsv = tsvector_literal(places)
                counts: Counter[str] = Counter()
                for stem, where in places.items():
                    counts[_clip_lexeme(stem)] += len(where)
                terms.update(dict.fromkeys(counts, 1))
                tokens += doc_len
                postings.extend(
                    (stem, fact.agent_id, fact.id, tf, doc_len, fact.created_at, fact.confidence)
                    for stem, tf in counts.items()
                )
            rows.append((
                fact.id, fact.agent_id, fact.text, fact.kind,
                json.dumps(fact.equivalents, ensure_ascii=False) if fact.equivalents else None,
                fact.created_at, fact.accessed_at, fact.access_count, fact.weight, fact.superseded_by,
                fact.pinned, fact.pinned_at, fact.confidence,
                fact.provenance.model_dump_json(exclude_none=True),
                state, tsv, doc_len,
            ))  # fmt: skip
        # COPY: the bulk path (ids are new, so plain inserts; one round trip per table).
        with c.cursor() as cur:
            with cur.copy(
                "COPY gm_facts (id, agent_id, text, kind, equivalents, created_at, accessed_at, "
                "access_count, weight, superseded_by, pinned, pinned_at, confidence, provenance, "
                "embed_state, tsv, doc_len) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
            if postings:
                with cur.copy(
                    "COPY gm_postings (term, agent_id, fact_id, tf, doc_len, created_at, confidence)"
                    " FROM STDIN"
                ) as copy:
                    for posting in postings:
                        copy.write_row(posting)
        self._adjust_stats(c, terms, len(indexed), tokens)

    def _put_vectors(self, c: psycopg.Connection[Any], items: Sequence[tuple[Fact, Vector]]) -> None:
        if not items:
            return
        dim = len(items[0][1])
        if any(len(v) != dim for _, v in items):
            raise InvalidInput("vectors of one batch must have the same dimension")
        self._ensure_vector_index(c, dim)
        with c.cursor() as cur:
            cur.executemany(  # vectors travel as binary float arrays (2x faster than text literals)
                "INSERT INTO gm_vectors (fact_id, agent_id, confidence, embedding)"
                " VALUES (%s, %s, %s, %b::float4[]::vector) "
                "ON CONFLICT (fact_id) DO UPDATE SET embedding = EXCLUDED.embedding",
                [(f.id, f.agent_id, f.confidence, _unit(v)) for f, v in items],
            )

    def _ensure_vector_index(self, c: psycopg.Connection[Any], dim: int) -> None:
        row = c.execute("SELECT value FROM gm_meta WHERE key = 'embedding_dim' FOR UPDATE").fetchone()
        if row is not None and int(row[0]) == dim:
            return
        if row is not None and c.execute("SELECT EXISTS (SELECT 1 FROM gm_vectors)").fetchone()[0]:
            raise InvalidInput(
                f"vector dimension {dim} differs from the stored vectors' ({row[0]}); re-embed first"
            )
        c.execute("DROP INDEX IF EXISTS gm_vectors_hnsw")
        if not self._defer_index:
            c.execute(
                pgsql.SQL(
                    "CREATE INDEX gm_vectors_hnsw ON gm_vectors"
                    " USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
                ).format(dim=pgsql.Literal(dim))
            )
        c.execute(
            "INSERT INTO gm_meta (key, value) VALUES ('embedding_dim', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(dim),),
        )

    @contextlib.contextmanager
    def deferred_vector_index(self) -> Iterator[None]:
        """Bulk loading: drop the HNSW index, and build it once at the end (much faster than per row).

        Searches stay correct meanwhile (exact scans); the index is rebuilt even if loading fails.
        """
        self._write(lambda c: c.execute("DROP INDEX IF EXISTS gm_vectors_hnsw"))
        self._defer_index = True
        try:
            yield
        finally:
            self._defer_index = False

            def rebuild(c: psycopg.Connection[Any]) -> None:
                row = c.execute("SELECT value FROM gm_meta WHERE key = 'embedding_dim'").fetchone()
                if row is not None:
                    c.execute(
                        pgsql.SQL(
                            "CREATE INDEX IF NOT EXISTS gm_vectors_hnsw ON gm_vectors"
                            " USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
                        ).format(dim=pgsql.Literal(int(row[0])))
                    )

            self._write(rebuild)

    def analyze(self) -> None:
        """Refresh planner statistics (after a bulk load; autovacuum does this eventually)."""
        self._read(lambda c: c.execute("ANALYZE"))

    def add_facts(
        self,
        facts: Sequence[Fact],
        vectors: Sequence[Vector | None] | None = None,
        embedding_model: str | None = None,
    ) -> None:
        vectors = list(vectors) if vectors is not None else [None] * len(facts)
        if len(vectors) != len(facts):
            raise ValueError("vectors must align with facts")
        if not facts:
            return

        def work(c: psycopg.Connection[Any]) -> None:
            model = self._current_model(c)
            states = []
            usable: list[tuple[Fact, Vector]] = []
            for fact, vector in zip(facts, vectors, strict=True):
                embeddable = fact.kind == "fact" and fact.superseded_by is None and model is not None
                ok = embeddable and vector is not None and embedding_model == model
                states.append(_EMBED_DONE if ok else (_EMBED_PENDING if embeddable else _EMBED_NONE))
                if ok:
                    usable.append((fact, vector))  # type: ignore[arg-type]
            self._insert_facts(c, facts, states)
            self._put_vectors(c, usable)

        self._write(work)

    def import_facts(self, facts: Sequence[Fact]) -> tuple[int, int]:
        def work(c: psycopg.Connection[Any]) -> tuple[int, int]:
            model = self._current_model(c)
            ids = [f.id for f in facts]
            known = {r[0] for r in c.execute("SELECT id FROM gm_facts WHERE id = ANY(%s)", (ids,)).fetchall()}
            fresh = [f for f in dict((f.id, f) for f in facts).values() if f.id not in known]
            states = [
                _EMBED_PENDING
                if f.kind == "fact" and f.superseded_by is None and model is not None
                else _EMBED_NONE
                for f in fresh
            ]
            self._insert_facts(c, fresh, states)
            return len(fresh), len(facts) - len(fresh)

        return self._write(work) if facts else (0, 0)

    def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE id = ANY(%s)", (ids,)
            ).fetchall()
        )
        found = {r[0]: self._fact(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def rank_info(self, fact_ids: Sequence[str]) -> dict[str, tuple[datetime, str]]:
        """``(created_at, confidence)`` of the live kind='fact' facts among ``fact_ids`` (no decoding)."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return {}
        rows = self._read(
            lambda c: c.execute(
                "SELECT id, created_at, confidence FROM gm_facts WHERE id = ANY(%s)"
                " AND superseded_by IS NULL AND kind = 'fact'",
                (ids,),
            ).fetchall()
        )
        return {r[0]: (_utc(r[1]), r[2]) for r in rows}

    def find_by_text(self, agent_id: str, text: str, kind: str = "fact") -> list[Fact]:
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE agent_id = %s AND md5(text) = md5(%s) "
                "AND text = %s AND kind = %s ORDER BY created_at, id",
                (agent_id, text, text, kind),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def list_facts(
        self,
        agent_id: str | None = None,
        *,
        include_superseded: bool = True,
        kinds: Sequence[str] = ("fact",),
    ) -> list[Fact]:
        clauses = ["kind = ANY(%s)"]
        params: list[Any] = [list(kinds)]
        if agent_id is not None:
            clauses.append("agent_id = %s")
            params.append(agent_id)
        if not include_superseded:
            clauses.append("superseded_by IS NULL")
        query = (
            f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE {' AND '.join(clauses)} ORDER BY created_at, id"
        )
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [self._fact(r) for r in rows]

    def latest_facts(self, agent_id: str, limit: int, *, include_superseded: bool = True) -> list[Fact]:
        """The newest ``limit`` facts of one agent, newest first (bounded; for listing endpoints)."""
        live = "" if include_superseded else " AND superseded_by IS NULL"
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE agent_id = %s AND kind = 'fact'{live}"
                " ORDER BY created_at DESC, id DESC LIMIT %s",
                (agent_id, limit),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def iter_facts(self, batch: int = 5000) -> Iterator[Fact]:
        """Every fact of every kind, oldest first, streamed in batches (used by migrate)."""
        last: tuple[datetime, str] | None = None
        while True:
            if last is None:
                query, params = (
                    f"SELECT {self._FACT_COLUMNS} FROM gm_facts ORDER BY created_at, id LIMIT %s",
                    [batch],
                )
            else:
                query, params = (
                    f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE (created_at, id) > (%s, %s) "
                    "ORDER BY created_at, id LIMIT %s",
                    [last[0], last[1], batch],
                )
            rows = self._read(lambda c, q=query, p=params: c.execute(q, p).fetchall())
            if not rows:
                return
            for row in rows:
                yield self._fact(row)
            last = (rows[-1][5], rows[-1][0])

    def supersedes(self, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return {}
        rows = self._read(
            lambda c: c.execute(
                "SELECT superseded_by, id FROM gm_facts WHERE superseded_by = ANY(%s)"
                " ORDER BY created_at, id",
                (ids,),
            ).fetchall()
        )
        out: dict[str, list[str]] = {}
        for by, fact_id in rows:
            out.setdefault(by, []).append(fact_id)
        return out

    def aliases(self, agent_ids: Sequence[str]) -> list[Fact]:
        if not agent_ids:
            return []
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE agent_id = ANY(%s) AND kind = 'alias' "
                "AND superseded_by IS NULL ORDER BY created_at, id",
                (list(agent_ids),),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def supersede(self, fact_ids: Sequence[str], superseded_by: str) -> list[str]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []

        def work(c: psycopg.Connection[Any]) -> list[str]:
            rows = c.execute(
                "UPDATE gm_facts SET superseded_by = %s, embed_state = 0 "
                "WHERE id = ANY(%s) AND superseded_by IS NULL RETURNING id",
                (superseded_by, ids),
            ).fetchall()
            changed = {r[0] for r in rows}
            self._unindex(c, sorted(changed))
            return [i for i in ids if i in changed]

        return self._write(work)

    def set_pinned(self, fact_ids: Sequence[str], pinned: bool, at: datetime) -> list[str]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []

        def work(c: psycopg.Connection[Any]) -> list[str]:
            rows = c.execute(
                "UPDATE gm_facts SET pinned = %s, pinned_at = %s"
                " WHERE id = ANY(%s) AND superseded_by IS NULL "
                "AND pinned <> %s RETURNING id",
                (pinned, at if pinned else None, ids, pinned),
            ).fetchall()
            changed = {r[0] for r in rows}
            return [i for i in ids if i in changed]

        return self._write(work)

    def record_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        ids = sorted(set(fact_ids))
        if not ids:
            return
        self._write(
            lambda c: c.execute(
                "UPDATE gm_facts SET access_count = access_count + 1,"
                " accessed_at = greatest(accessed_at, %s) "
                "WHERE id IN (SELECT id FROM gm_facts WHERE id = ANY(%s) AND superseded_by IS NULL "
                "ORDER BY id FOR UPDATE)",
                (at, ids),
            )
        )

    def update_weights(self, weights: dict[str, float]) -> int:
        if not weights:
            return 0
        items = sorted(weights.items())

        def work(c: psycopg.Connection[Any]) -> int:
            cur = c.execute(
                "UPDATE gm_facts f SET weight = u.w FROM unnest(%s::text[], %s::float8[]) AS u(id, w) "
                "WHERE f.id = u.id AND f.weight > u.w",
                ([i for i, _ in items], [w for _, w in items]),
            )
            return cur.rowcount

        return self._write(work)

    def delete_facts(self, fact_ids: Sequence[str]) -> list[str]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []

        def work(c: psycopg.Connection[Any]) -> list[str]:
            locked = [
                r[0]
                for r in c.execute(
                    "SELECT id FROM gm_facts WHERE id = ANY(%s) AND NOT pinned ORDER BY id FOR UPDATE",
                    (ids,),
                ).fetchall()
            ]
            self._unindex(c, locked)
            c.execute("DELETE FROM gm_facts WHERE id = ANY(%s)", (locked,))
            present = set(locked)
            return [i for i in ids if i in present]

        return self._write(work)

    def agents(self) -> list[str]:
        rows = self._read(
            lambda c: c.execute(
                "SELECT agent_id FROM gm_facts UNION SELECT agent_id FROM gm_checkpoints "
                "UNION SELECT agent_id FROM gm_links ORDER BY 1"
            ).fetchall()
        )
        return [r[0] for r in rows]

    def stats(self, agent_id: str) -> MemoryStats:
        def work(c: psycopg.Connection[Any]) -> MemoryStats:
            row = c.execute(
                "SELECT"
                " count(*) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
                " count(*) FILTER (WHERE kind = 'fact' AND superseded_by IS NOT NULL),"
                " count(*) FILTER (WHERE kind = 'alias' AND superseded_by IS NULL),"
                " count(*) FILTER (WHERE pinned AND superseded_by IS NULL),"
                " min(created_at) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
                " max(created_at) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
                " avg(weight) FILTER (WHERE kind = 'fact' AND superseded_by IS NULL),"
                " count(*) FILTER (WHERE embed_state = 1 AND superseded_by IS NULL)"
                " FROM gm_facts WHERE agent_id = %s",
                (agent_id,),
            ).fetchone()
            checkpoints = c.execute(
                "SELECT count(*) FROM gm_checkpoints WHERE agent_id = %s", (agent_id,)
            ).fetchone()
            links = c.execute("SELECT count(*) FROM gm_links WHERE agent_id = %s", (agent_id,)).fetchone()
            return MemoryStats(
                agent_id=agent_id, fact_count=row[0], superseded_count=row[1], alias_count=row[2],
                pinned_count=row[3], checkpoint_count=checkpoints[0], link_count=links[0],
                pending_embeddings=row[7], oldest_at=_utc(row[4]), newest_at=_utc(row[5]),
                avg_weight=round(float(row[6]), 6) if row[6] is not None else 0.0,
            )  # fmt: skip

        return self._read(work)

    # -- candidate retrieval -----------------------------------------------------------------------
    def _term_stems(self, terms: Sequence[str]) -> dict[str, list[str]]:
        analysed = self._tokenizer.analyse(list(terms))
        return {
            term: [_clip_lexeme(s) for s in counts] for term, (counts, _) in zip(terms, analysed, strict=True)
        }

    @staticmethod
    def _stem_frequencies(c: psycopg.Connection[Any], stems: Sequence[str]) -> dict[str, int]:
        if not stems:
            return {}
        rows = c.execute(
            "SELECT term, sum(df)::bigint FROM gm_terms WHERE term = ANY(%s) GROUP BY term", (list(stems),)
        ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        terms = list(dict.fromkeys(terms))
        if not terms:
            return {}
        stems = self._term_stems(terms)
        all_stems = sorted({s for group in stems.values() for s in group})
        frequencies = self._read(lambda c: self._stem_frequencies(c, all_stems))
        return {term: min((frequencies.get(s, 0) for s in group), default=0) for term, group in stems.items()}

    def keyword_search(
        self,
        agent_ids: Sequence[str],
        terms: Sequence[str],
        limit: int,
        confidences: Sequence[str] | None = None,
    ) -> list[ScoredId]:
        terms = [t for t in terms if t.strip()]
        if not terms or not agent_ids or limit <= 0 or confidences == []:
            return []
        # FTS5 scores every query phrase separately, even two terms with one stem: keep duplicates.
        groups = [self._term_stems([t])[t] for t in terms]
        groups = [g for g in groups if g]
        if not groups:
            return []
        if any(len(g) > 1 for g in groups):
            return self._read(lambda c: self._phrase_search(c, groups, agent_ids, limit, confidences))

        def work(c: psycopg.Connection[Any]) -> list[ScoredId]:
            docs, tokens = self._corpus(c)
            if docs <= 0:
                return []
            stems = [g[0] for g in groups]
            frequencies = self._stem_frequencies(c, sorted(set(stems)))
            present = [s for s in stems if frequencies.get(s, 0) > 0]
            if not present:
                return []
            idf = [_idf(docs, frequencies[s]) for s in present]
            params: list[Any] = [present, idf, tokens / docs if tokens else 1.0, list(agent_ids)]
            confidence_clause = ""
            if confidences is not None:
                confidence_clause = " AND p.confidence = ANY(%s)"
                params.append(list(confidences))
            params.append(limit)
            rows = c.execute(
                "WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[])"
                " WITH ORDINALITY AS q(stem, idf, i))"
                # All float8 (a bare 0.75 would be numeric): the same IEEE operations, in FTS5's order.
                " SELECT p.fact_id, sum(q.idf * ((p.tf::float8 * "
                f"{BM25_K1 + 1.0!r}::float8) / (p.tf::float8 + {BM25_K1!r}::float8 * "
                f"(1::float8 - {BM25_B!r}::float8 + {BM25_B!r}::float8 * p.doc_len::float8 / %s::float8)))"
                " ORDER BY q.i) AS s,"
                " min(p.created_at) AS created"
                " FROM q JOIN gm_postings p ON p.term = q.stem"
                " WHERE p.agent_id = ANY(%s)" + confidence_clause +
                " GROUP BY p.fact_id ORDER BY s DESC, created, p.fact_id LIMIT %s",
                params,
            ).fetchall()  # fmt: skip
            return [ScoredId(r[0], float(r[1])) for r in rows]

        return self._read(work)

    @staticmethod
    def _corpus(c: psycopg.Connection[Any]) -> tuple[int, int]:
        docs, tokens = c.execute("SELECT sum(docs)::bigint, sum(tokens)::bigint FROM gm_fts_stats").fetchone()
        return int(docs or 0), int(tokens or 0)

    def _phrase_search(
        self,
        c: psycopg.Connection[Any],
        groups: list[list[str]],
        agent_ids: Sequence[str],
        limit: int,
        confidences: Sequence[str] | None,
    ) -> list[ScoredId]:
        """BM25 where some query terms are phrases (adjacent stems, in order), scored like FTS5."""
        docs, tokens = self._corpus(c)
        if docs <= 0:
            return []
        queries = [tsquery_phrase(g) if len(g) > 1 else tsquery_literal(g) for g in groups]
        singles = self._stem_frequencies(c, sorted({g[0] for g in groups if len(g) == 1}))
        frequencies = []
        for group, query in zip(groups, queries, strict=True):
            if len(group) == 1:
                frequencies.append(singles.get(group[0], 0))
            else:
                frequencies.append(
                    c.execute("SELECT count(*) FROM gm_facts WHERE tsv @@ %s::tsquery", (query,)).fetchone()[
                        0
                    ]
                )
        live = [(g, q, n) for g, q, n in zip(groups, queries, frequencies, strict=True) if n > 0]
        if not live:
            return []
        params: list[Any] = [" | ".join(f"({q})" for _, q, _ in live), list(agent_ids)]
        clause = ""
        if confidences is not None:
            clause = " AND f.confidence = ANY(%s)"
            params.append(list(confidences))
        params.append(sorted({s for g, _, _ in live for s in g}))
        rows = c.execute(
            "SELECT f.id, f.created_at, f.doc_len, u.lexeme, u.positions FROM gm_facts f"
            " CROSS JOIN LATERAL unnest(f.tsv) AS u"
            " WHERE f.tsv @@ %s::tsquery AND f.agent_id = ANY(%s)" + clause + " AND u.lexeme = ANY(%s)",
            params,
        ).fetchall()
        found: dict[str, tuple[datetime, int, dict[str, set[int]]]] = {}
        for fact_id, created, doc_len, lexeme, positions in rows:
            entry = found.setdefault(fact_id, (created, doc_len, {}))
            entry[2][lexeme] = set(positions or ())
        avgdl = tokens / docs
        scored = []
        for fact_id, (created, doc_len, places) in found.items():
            score = 0.0
            matched = False
            for group, _, hits in live:
                first = places.get(group[0], set())
                tf = sum(
                    1 for p in first if all(p + k in places.get(s, ()) for k, s in enumerate(group) if k)
                )
                if tf:
                    matched = True
                    norm = 1 - BM25_B + BM25_B * doc_len / avgdl
                    score += _idf(docs, hits) * ((tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * norm))
            if matched:
                scored.append((-score, created, fact_id))
        scored.sort()
        return [ScoredId(fid, -neg) for neg, _, fid in scored[:limit]]

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        """For each live fact: ids of the live facts its agent wrote right before/after it, oldest first."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids or window <= 0:
            return {}

        def work(c: psycopg.Connection[Any]) -> dict[str, list[str]]:
            rows = c.execute(
                "SELECT a.id, n.id, n.created_at FROM gm_facts a"
                " CROSS JOIN LATERAL ("
                "  (SELECT id, created_at FROM gm_facts b WHERE b.agent_id = a.agent_id"
                "    AND b.superseded_by IS NULL AND b.kind = 'fact'"
                "    AND (b.created_at, b.id) < (a.created_at, a.id)"
                "    ORDER BY b.created_at DESC, b.id DESC LIMIT %s)"
                "  UNION ALL"
                "  (SELECT id, created_at FROM gm_facts b WHERE b.agent_id = a.agent_id"
                "    AND b.superseded_by IS NULL AND b.kind = 'fact'"
                "    AND (b.created_at, b.id) > (a.created_at, a.id)"
                "    ORDER BY b.created_at, b.id LIMIT %s)"
                " ) AS n"
                " WHERE a.id = ANY(%s) AND a.superseded_by IS NULL AND a.kind = 'fact'",
                (window, window, ids),
            ).fetchall()
            out: dict[str, list[tuple[datetime, str]]] = {}
            for fact_id, other, created in rows:
                out.setdefault(fact_id, []).append((created, other))
            live = {
                r[0]
                for r in c.execute(
                    "SELECT id FROM gm_facts WHERE id = ANY(%s) AND superseded_by IS NULL AND kind = 'fact'",
                    (ids,),
                ).fetchall()
            }
            return {fid: [o for _, o in sorted(out.get(fid, []))] for fid in ids if fid in live}

        return self._read(work)

    def recent(
        self, agent_ids: Sequence[str], limit: int, confidences: Sequence[str] | None = None
    ) -> list[str]:
        if not agent_ids or limit <= 0 or confidences == []:
            return []
        parts = []
        params: list[Any] = []
        for agent in dict.fromkeys(agent_ids):
            clause = ""
            params.append(agent)
            if confidences is not None:
                clause = " AND confidence = ANY(%s)"
                params.append(list(confidences))
            parts.append(
                "(SELECT id, created_at FROM gm_facts WHERE agent_id = %s AND superseded_by IS NULL "
                f"AND kind = 'fact'{clause} ORDER BY created_at DESC, id LIMIT %s)"
            )
            params.append(limit)
        query = (
            "SELECT id, created_at FROM (" + " UNION ALL ".join(parts) + ") AS r"
            " ORDER BY created_at DESC, id LIMIT %s"
        )
        params.append(limit)
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [r[0] for r in rows]

    # -- vectors -----------------------------------------------------------------------------------
    def embedding_model(self) -> str | None:
        return self._read(self._current_model)

    def reset_embeddings(self, model: str | None) -> int:
        def work(c: psycopg.Connection[Any]) -> int:
            c.execute("LOCK TABLE gm_vectors IN EXCLUSIVE MODE")
            c.execute("DELETE FROM gm_vectors")
            c.execute("DROP INDEX IF EXISTS gm_vectors_hnsw")
            c.execute("DELETE FROM gm_meta WHERE key = 'embedding_dim'")
            if model is None:
                c.execute("DELETE FROM gm_meta WHERE key = 'embedding_model'")
                c.execute("UPDATE gm_facts SET embed_state = 0 WHERE embed_state <> 0")
                return 0
            c.execute(
                "INSERT INTO gm_meta (key, value) VALUES ('embedding_model', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (model,),
            )
            c.execute("UPDATE gm_facts SET embed_state = 0 WHERE embed_state <> 0 AND NOT "
                      "(kind = 'fact' AND superseded_by IS NULL)")  # fmt: skip
            return c.execute(
                "UPDATE gm_facts SET embed_state = 1 WHERE kind = 'fact' AND superseded_by IS NULL"
            ).rowcount

        return self._write(work)

    def pending_embeddings(self, limit: int) -> list[Fact]:
        rows = self._read(
            lambda c: c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE embed_state = 1 AND superseded_by IS NULL "
                "ORDER BY seq LIMIT %s",
                (limit,),
            ).fetchall()
        )
        return [self._fact(r) for r in rows]

    def pending_embedding_count(self) -> int:
        return self._read(
            lambda c: c.execute(
                "SELECT count(*) FROM gm_facts WHERE embed_state = 1 AND superseded_by IS NULL"
            ).fetchone()[0]
        )

    def set_vectors(self, items: Iterable[tuple[str, Vector]], model: str) -> int:
        pairs = list(items)
        if not pairs:
            return 0

        def work(c: psycopg.Connection[Any]) -> int:
            if self._current_model(c) != model:
                return 0
            wanted = dict(pairs)
            rows = c.execute(
                f"SELECT {self._FACT_COLUMNS} FROM gm_facts WHERE id = ANY(%s) AND superseded_by IS NULL "
                "AND kind = 'fact' ORDER BY id FOR UPDATE",
                (list(wanted),),
            ).fetchall()
            facts = [self._fact(r) for r in rows]
            self._put_vectors(c, [(f, wanted[f.id]) for f in facts])
            c.execute("UPDATE gm_facts SET embed_state = 2 WHERE id = ANY(%s)", ([f.id for f in facts],))
            return len(facts)

        return self._write(work)

    def vector_search(
        self,
        agent_ids: Sequence[str],
        query: Vector,
        model: str,
        limit: int,
        confidences: Sequence[str] | None = None,
    ) -> list[ScoredId]:
        if not agent_ids or limit <= 0 or confidences == []:
            return []
        values = [float(v) for v in query]
        norm = math.sqrt(sum(v * v for v in values))
        if norm == 0 or not math.isfinite(norm):
            return []

        def work(c: psycopg.Connection[Any]) -> list[ScoredId]:
            meta = dict(
                c.execute(
                    "SELECT key, value FROM gm_meta WHERE key IN ('embedding_model', 'embedding_dim')"
                ).fetchall()
            )
            if meta.get("embedding_model") != model or "embedding_dim" not in meta:
                return []
            dim = int(meta["embedding_dim"])
            if dim != len(values):
                return []
            with c.transaction():
                c.execute(
                    pgsql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                        pgsql.Literal(min(1000, max(100, 2 * limit)))
                    )
                )
                c.execute("SET LOCAL hnsw.iterative_scan = strict_order")
                distance = pgsql.SQL("embedding::vector({dim}) <=> %s::vector({dim})").format(
                    dim=pgsql.Literal(dim)
                )
                clause = pgsql.SQL("")
                params: list[Any] = [_vector_literal(values), list(agent_ids)]
                if confidences is not None:
                    clause = pgsql.SQL(" AND v.confidence = ANY(%s)")
                    params.append(list(confidences))
                params.extend([_vector_literal(values), limit])
                rows = c.execute(
                    pgsql.SQL(
                        "SELECT v.fact_id, 1 - ({distance}) AS sim, f.created_at FROM gm_vectors v "
                        "JOIN gm_facts f ON f.id = v.fact_id "
                        "WHERE v.agent_id = ANY(%s){clause} AND f.superseded_by IS NULL "
                        "ORDER BY {order} LIMIT %s"
                    ).format(distance=distance, clause=clause,
                             order=pgsql.SQL("v.embedding::vector({dim}) <=> %s::vector({dim})").format(
                                 dim=pgsql.Literal(dim))),
                    params,
                ).fetchall()  # fmt: skip
            ranked = sorted((-float(sim), created, fid) for fid, sim, created in rows if sim is not None)
            return [ScoredId(fid, -neg) for neg, _, fid in ranked if math.isfinite(neg)]

        return self._read(work)

    # -- checkpoints -------------------------------------------------------------------------------
    _CHECKPOINT_COLUMNS = "id, agent_id, created_at, message_count, state, messages, metadata, provenance"
    _CHECKPOINT_INSERT = (
        "INSERT INTO gm_checkpoints (id, agent_id, created_at, state, messages, message_count, metadata,"
        " provenance)"
        " VALUES (%s,%s,%s,%s,%s,%s,%s,%s)"
    )

    @staticmethod
    def _checkpoint_params(cp: Checkpoint) -> tuple[Any, ...]:
        return (
            cp.id, cp.agent_id, cp.created_at, json.dumps(cp.state, ensure_ascii=False),
            json.dumps(cp.messages, ensure_ascii=False) if cp.messages is not None else None,
            cp.message_count, json.dumps(cp.metadata, ensure_ascii=False),
            cp.provenance.model_dump_json(exclude_none=True),
        )  # fmt: skip

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        params = self._checkpoint_params(checkpoint)
        self._write(lambda c: c.execute(self._CHECKPOINT_INSERT, params))

    def import_checkpoints(self, checkpoints: Sequence[Checkpoint]) -> tuple[int, int]:
        def work(c: psycopg.Connection[Any]) -> tuple[int, int]:
            added = 0
            for cp in checkpoints:
                cur = c.execute(
                    self._CHECKPOINT_INSERT + " ON CONFLICT (id) DO NOTHING", self._checkpoint_params(cp)
                )
                added += cur.rowcount
            return added, len(checkpoints) - added

        return self._write(work) if checkpoints else (0, 0)

    def latest_checkpoint(self, agent_id: str) -> Checkpoint | None:
        row = self._read(
            lambda c: c.execute(
                f"SELECT {self._CHECKPOINT_COLUMNS} FROM gm_checkpoints WHERE agent_id = %s "
                "ORDER BY created_at DESC, id DESC LIMIT 1",
                (agent_id,),
            ).fetchone()
        )
        return self._checkpoint(row) if row else None

    def get_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        row = self._read(
            lambda c: c.execute(
                f"SELECT {self._CHECKPOINT_COLUMNS} FROM gm_checkpoints WHERE id = %s", (checkpoint_id,)
            ).fetchone()
        )
        return self._checkpoint(row) if row else None

    def list_checkpoints(self, agent_id: str | None = None, limit: int | None = None) -> list[Checkpoint]:
        params: list[Any] = []
        query = f"SELECT {self._CHECKPOINT_COLUMNS} FROM gm_checkpoints"
        if agent_id is not None:
            query += " WHERE agent_id = %s"
            params.append(agent_id)
        query += " ORDER BY created_at DESC, id DESC"
        if limit is not None:
            query += " LIMIT %s"
            params.append(limit)
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [self._checkpoint(r) for r in rows]

    # -- links -------------------------------------------------------------------------------------
    _LINK_COLUMNS = "id, agent_id, source, target, relation, created_at, provenance"
    _LINK_INSERT = (
        "INSERT INTO gm_links (id, agent_id, source, target, relation, created_at, provenance) "
        "VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT DO NOTHING"
    )

    @staticmethod
    def _link_params(link: Link) -> tuple[Any, ...]:
        return (
            link.id, link.agent_id, link.source, link.target, link.relation, link.created_at,
            link.provenance.model_dump_json(exclude_none=True),
        )  # fmt: skip

    def add_link(self, link: Link) -> Link:
        def work(c: psycopg.Connection[Any]) -> Link:
            c.execute(self._LINK_INSERT, self._link_params(link))
            row = c.execute(
                f"SELECT {self._LINK_COLUMNS} FROM gm_links WHERE agent_id = %s AND source = %s"
                " AND target = %s "
                "AND relation = %s",
                (link.agent_id, link.source, link.target, link.relation),
            ).fetchone()
            return self._link(row)

        return self._write(work)

    def import_links(self, links: Sequence[Link]) -> tuple[int, int]:
        def work(c: psycopg.Connection[Any]) -> tuple[int, int]:
            added = sum(c.execute(self._LINK_INSERT, self._link_params(link)).rowcount for link in links)
            return added, len(links) - added

        return self._write(work) if links else (0, 0)

    def links(self, agent_ids: Sequence[str] | None = None) -> list[Link]:
        params: list[Any] = []
        query = f"SELECT {self._LINK_COLUMNS} FROM gm_links"
        if agent_ids is not None:
            if not agent_ids:
                return []
            query += " WHERE agent_id = ANY(%s)"
            params.append(list(agent_ids))
        query += " ORDER BY created_at, id"
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [self._link(r) for r in rows]

    # -- counters ----------------------------------------------------------------------------------
    def bump_write_counter(self, agent_id: str, by: int = 1) -> int:
        row = self._write(
            lambda c: c.execute(
                "INSERT INTO gm_counters (agent_id, writes) VALUES (%s, %s) ON CONFLICT (agent_id) "
                "DO UPDATE SET writes = gm_counters.writes + EXCLUDED.writes RETURNING writes",
                (agent_id, by),
            ).fetchone()
        )
        return int(row[0])

    def reset_write_counter(self, agent_id: str) -> None:
        self._write(lambda c: c.execute("DELETE FROM gm_counters WHERE agent_id = %s", (agent_id,)))


def _idf(docs: int, hits: int) -> float:
    """FTS5's BM25 idf: ln((N - n + 0.5) / (n + 0.5)), floored at 1e-6."""
    value = math.log((docs - hits + 0.5) / (hits + 0.5))
    return value if value > 0 else 1e-6


def _utc(moment: datetime | None) -> datetime | None:
    """Timestamps come back in the session time zone; models carry them as UTC like SQLite does."""
    return moment.astimezone(UTC) if moment is not None else None


def _brief(exc: BaseException) -> str:
    """One line describing a driver error, without connection secrets."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    lines = str(exc).strip().splitlines()
    text = primary or (lines[0] if lines else type(exc).__name__)
    return re.sub(r"password=\S+", "password=***", text)
