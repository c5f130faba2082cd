"""The PostgreSQL schema: versioned migrations applied once, under an advisory lock, by the first server."""

from __future__ import annotations

from typing import Any

import psycopg

from graymatter.errors import SchemaTooNew, StorageError, StoreUnavailable
from graymatter.store.decay import decay_indexes
from graymatter.store.postgres.connection import PostgresConnections

SCHEMA_VERSION = 5
SESSION_SQL = 'substring({t}provenance from \'"session":"((?:[^"\\\\]|\\\\.)*)"\')'
"""A fact's session id as spelled in its stored JSON (``{t}``: a table alias and a dot, or nothing), written
as the ``gm_facts_session`` index writes it. A pattern, not a ``jsonb`` cast: it never fails on a malformed
row (decoding reports those), and inside a JSON string every quote is escaped, so only the key matches."""
STAT_SHARDS = 16
_MIGRATION_LOCK = 0x67726179  # "gray": advisory lock serialising schema creation across servers

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
    # 2: conversation turns (facts whose provenance names a session) in session order, for context lending.
    2: [
        f"""CREATE INDEX gm_facts_session ON gm_facts
           (agent_id, {SESSION_SQL.format(t="")}, created_at, id)
           WHERE superseded_by IS NULL AND kind = 'fact' AND {SESSION_SQL.format(t="")} IS NOT NULL"""
    ],
    # 3: incremental decay: each fact's next decay moment, and the facts due found by index (store/decay.py).
    3: decay_indexes("gm_facts", "timestamptz"),
    # 4: phrases from the postings (ADR 0018): each posting carries its token positions, copied from the
    # fact's tsvector, inside the covering index; the GIN index over tsvectors is no longer read.
    4: [
        "ALTER TABLE gm_postings ADD COLUMN positions smallint[]",
        """UPDATE gm_postings p SET positions = u.positions::smallint[]
           FROM (SELECT f.id, f.agent_id, t.lexeme, t.positions FROM gm_facts f
                 CROSS JOIN LATERAL unnest(f.tsv) AS t WHERE f.tsv IS NOT NULL) AS u
           WHERE p.term = u.lexeme AND p.agent_id = u.agent_id AND p.fact_id = u.id""",
        "ALTER TABLE gm_postings DROP CONSTRAINT gm_postings_pkey",
        """ALTER TABLE gm_postings ADD CONSTRAINT gm_postings_pkey PRIMARY KEY (term, agent_id, fact_id)
           INCLUDE (tf, doc_len, created_at, confidence, positions)""",
        "DROP INDEX IF EXISTS gm_facts_tsv",
        # the vector graph over half-precision copies (vectors.py), rebuilt once for the stored dimension
        """DO $$ DECLARE dim int; BEGIN
             SELECT value::int INTO dim FROM gm_meta WHERE key = 'embedding_dim';
             DROP INDEX IF EXISTS gm_vectors_hnsw;
             IF dim IS NOT NULL THEN
               EXECUTE format('CREATE INDEX gm_vectors_hnsw ON gm_vectors USING hnsw'
                 ' ((embedding::halfvec(%s)) halfvec_cosine_ops) WITH (ef_construction = 32)', dim);
             END IF;
           END $$""",
    ],
    # 5: the full-text statistics count their changes (a trigger, so every writer's updates count, also a
    # server of the previous version still running): equal counts mean equal document frequencies, which a
    # recall then answers from memory (bm25.py, ADR 0018 "Recall and ingest, session 5").
    5: [
        "ALTER TABLE gm_fts_stats ADD COLUMN changes bigint NOT NULL DEFAULT 0",
        """CREATE OR REPLACE FUNCTION gm_fts_stats_count() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN NEW.changes := OLD.changes + 1; RETURN NEW; END $$""",
        """CREATE TRIGGER gm_fts_stats_changes BEFORE UPDATE ON gm_fts_stats
           FOR EACH ROW EXECUTE FUNCTION gm_fts_stats_count()""",
    ],
}


def _current(c: psycopg.Connection[Any]) -> int:
    exists = c.execute("SELECT to_regclass('gm_meta') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = c.execute("SELECT value FROM gm_meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def _apply(db: PostgresConnections, c: psycopg.Connection[Any]) -> None:
    c.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
    now = _current(c)
    if now > SCHEMA_VERSION:
        raise SchemaTooNew(f"database {db.url} was upgraded by a newer graymatter meanwhile")
    for step in range(now + 1, SCHEMA_VERSION + 1):
        for statement in _MIGRATIONS[step]:
            c.execute(statement)
        c.execute(
            "INSERT INTO gm_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(step),),
        )


def _locked_apply(db: PostgresConnections, c: psycopg.Connection[Any]) -> None:
    """The migration under a session advisory lock, in a transaction begun after the lock is held.

    A transaction that began before waiting for the lock would still see the catalog as it was (no
    ``gm_meta`` yet) after another server's migration committed, and run it a second time.
    """
    c.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
    try:
        with c.transaction():
            _apply(db, c)
    finally:
        c.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))


def migrate(db: PostgresConnections) -> None:
    """Bring the database to :data:`SCHEMA_VERSION`, refusing one written by a newer graymatter."""
    version = db._read(_current)
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"database {db.url} was written by a newer graymatter (schema {version}, this version "
            f"reads up to {SCHEMA_VERSION}); upgrade graymatter. The database was not modified."
        )
    if version == SCHEMA_VERSION:
        return
    try:
        db._run(lambda c: _locked_apply(db, c), write=False)
    except StorageError as exc:
        if "extension" in exc.message and "vector" in exc.message:
            raise StoreUnavailable(
                f"the pgvector extension is missing in {db.url} and this user cannot create it; "
                "ask the database owner to run CREATE EXTENSION vector"
            ) from None
        raise
