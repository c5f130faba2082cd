"""The SQLite schema: its versioned migrations, and the checks that open a file only if it is ours."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graymatter.errors import CorruptDatabase, SchemaTooNew
from graymatter.store.decay import decay_indexes
from graymatter.store.fts import FTS_TOKENIZER
from graymatter.store.sqlite.connection import SQLiteConnections, configure, retry_busy, translate
from graymatter.store.sqlite.keys import LIVE_SQL

DB_FILENAME = "graymatter.db"
SESSION_SQL = "(CASE WHEN json_valid(provenance) THEN json_extract(provenance, '$.session') END)"
"""A fact's session id, spelled exactly as the ``facts_session`` index spells it (NULL, never an error,
for a provenance that is not JSON: such a row is reported as corrupt when it is decoded)."""
SCHEMA_VERSION = 9
INDEXED_SQL = "{row}kind = 'fact' AND {row}superseded_by IS NULL"
"""The rows the full-text index held (live facts) in schemas 4-8, whose kinds were texts (``{row}``: a
prefix); schema 9 spells it ``keys.LIVE_SQL``."""

_LAST_ROWID = "(SELECT coalesce(max(rowid), 0) FROM facts)"
_LAST = "(SELECT coalesce(max(rowid),0) FROM facts)"
_CODES = "WHERE key >= 'agent_code:' AND key < 'agent_code;'"
"""The ``meta`` rows that give agents their codes (schema 9)."""
_SESSION = SESSION_SQL.replace(", ", ",")
_LIVE = LIVE_SQL.format(row="").replace(" = ", "=")
_OLD = LIVE_SQL.format(row="old.").replace(" = ", "=")
_NEW = LIVE_SQL.format(row="new.").replace(" = ", "=")

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID""",
        """CREATE TABLE facts (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL DEFAULT 'fact',
            equivalents TEXT,
            created_at INTEGER NOT NULL,
            accessed_at INTEGER NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            weight REAL NOT NULL DEFAULT 1.0,
            superseded_by TEXT,
            pinned INTEGER NOT NULL DEFAULT 0,
            pinned_at INTEGER,
            confidence TEXT NOT NULL DEFAULT 'inferred',
            provenance TEXT NOT NULL DEFAULT '{}',
            embed_state INTEGER NOT NULL DEFAULT 0
        )""",
        """CREATE INDEX facts_live_recent ON facts(agent_id, created_at, id)
           WHERE superseded_by IS NULL AND kind = 'fact'""",
        """CREATE INDEX facts_agent_text ON facts(agent_id, text)""",
        """CREATE INDEX facts_agent_kind ON facts(agent_id, kind, created_at)""",
        """CREATE INDEX facts_superseded_by ON facts(superseded_by) WHERE superseded_by IS NOT NULL""",
        """CREATE INDEX facts_pending ON facts(embed_state) WHERE embed_state = 1""",
        f"""CREATE VIRTUAL TABLE facts_fts USING fts5(text, tokenize='{FTS_TOKENIZER}')""",
        """CREATE VIRTUAL TABLE facts_vocab USING fts5vocab(facts_fts, 'row')""",
        """CREATE TABLE vectors (
            fact_rowid INTEGER PRIMARY KEY,
            agent_id TEXT NOT NULL,
            confidence INTEGER NOT NULL,
            vec BLOB NOT NULL
        )""",
        """CREATE INDEX vectors_agent ON vectors(agent_id, fact_rowid)""",
        """CREATE TABLE checkpoints (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            state TEXT NOT NULL,
            messages TEXT,
            message_count INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            provenance TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE INDEX checkpoints_agent ON checkpoints(agent_id, created_at DESC, id DESC)""",
        """CREATE TABLE links (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            relation TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            provenance TEXT NOT NULL DEFAULT '{}',
            UNIQUE (agent_id, source, target, relation)
        )""",
    ],
    # 2: conversation turns (facts whose provenance names a session) in session order, for context lending.
    2: [
        f"""CREATE INDEX facts_session ON facts(agent_id, {SESSION_SQL}, created_at, id)
           WHERE superseded_by IS NULL AND kind = 'fact' AND {SESSION_SQL} IS NOT NULL"""
    ],
    # 3: incremental decay: each fact's next decay moment, and the facts due found by index (store/decay.py).
    3: decay_indexes("facts", "INTEGER"),
    # 4: disk and ingest (docs/decisions/0011): exact-text lookups by an 8-byte hash instead of a second copy
    # of every text in an index, and an external-content FTS5 table (the text lives once, in ``facts``)
    # holding exactly the live facts: inserts add theirs in one INSERT ... SELECT per write (facts.py; a
    # per-row trigger costs FTS5 5x more), triggers retire the entries of rows tombstoned, re-kinded or
    # deleted. Every fact is kept; the index is rebuilt from them.
    4: [
        "ALTER TABLE facts ADD COLUMN text_hash INTEGER",
        "UPDATE facts SET text_hash = gm_text_hash(text)",
        "CREATE INDEX facts_text_hash ON facts(text_hash)",
        "DROP INDEX facts_agent_text",
        "DROP TABLE facts_vocab",
        "DROP TABLE facts_fts",
        f"""CREATE VIRTUAL TABLE facts_fts USING fts5(text, content='facts', content_rowid='rowid',
            tokenize='{FTS_TOKENIZER}')""",
        "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE "
        + INDEXED_SQL.format(row=""),
        """CREATE VIRTUAL TABLE facts_vocab USING fts5vocab(facts_fts, 'row')""",
        f"""CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts WHEN {INDEXED_SQL.format(row="old.")} BEGIN
            INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', old.rowid, old.text); END""",
        f"""CREATE TRIGGER facts_fts_update AFTER UPDATE OF text, kind, superseded_by ON facts BEGIN
            INSERT INTO facts_fts(facts_fts, rowid, text) SELECT 'delete', old.rowid, old.text
                WHERE {INDEXED_SQL.format(row="old.")};
            INSERT INTO facts_fts(rowid, text) SELECT new.rowid, new.text
                WHERE {INDEXED_SQL.format(row="new.")};
            END""",
    ],
    # 5: disk and ingest, session 4 (docs/decisions/0011). One listing index instead of two: live facts
    # (``facts_live_recent``, partial) and all facts (``facts_agent_kind``, no id column) are walked in one
    # index that carries the id (no sort of created-at ties) and ``superseded_by`` (a live walk skips a
    # tombstone in the index, without reading its row): 32 bytes and one index insert less per fact.
    5: [
        "CREATE INDEX facts_listing ON facts(agent_id, kind, created_at, id, superseded_by)",
        "DROP INDEX facts_live_recent",
        "DROP INDEX facts_agent_kind",
    ],
    # 6: exact-text keys leave the write path (same record). ``facts_text`` holds (hash, rowid) of every fact
    # up to the ``text_settled`` rowid, filled in hash order every SETTLE_ROWS facts (facts.py) instead of one
    # random index insert per fact; lookups read it plus the unsettled tail past that rowid (reads.py). A
    # delete removes its key and, when the deleted row was the last one (its rowid can come back), lowers
    # the mark.
    6: [
        """CREATE TABLE facts_text (text_hash INTEGER NOT NULL, fact_rowid INTEGER NOT NULL,
            PRIMARY KEY (text_hash, fact_rowid)) WITHOUT ROWID""",
        "INSERT INTO facts_text SELECT text_hash, rowid FROM facts WHERE text_hash IS NOT NULL ORDER BY 1, 2",
        "DROP INDEX facts_text_hash",
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'text_settled', coalesce(max(rowid), 0) FROM facts",
        f"""CREATE TRIGGER facts_text_delete AFTER DELETE ON facts BEGIN
            DELETE FROM facts_text WHERE text_hash = old.text_hash AND fact_rowid = old.rowid;
            UPDATE meta SET value = {_LAST_ROWID}
                WHERE key = 'text_settled' AND CAST(value AS INTEGER) > {_LAST_ROWID};
            END""",
    ],
    # 7: disk and ingest, session 6 (docs/decisions/0011). ``facts_listing`` without the id (created-at
    # ties, rare, are sorted by id from the rows: the same order and cursors as before) and no index of
    # never-visited facts: each agent's creation mark in ``meta`` (store/sqlite/decay.py) replaces
    # ``facts_decay_fresh``, set here to the agent's oldest never-visited fact in scope (or its newest fact).
    # New rows leave ``text_hash`` NULL (the settle and this trigger hash the text in SQL, every connection
    # has the function) and store ``accessed_at`` 0 until a first access (rows.AS_CREATED): 17 bytes less.
    # Rows already stored keep their values, which read the same. Text keys shrink to 24 bits (rows.text_hash:
    # 5 bytes less per settled key), so the settled ones are hashed again.
    7: [
        "DELETE FROM facts_text",
        "INSERT INTO facts_text SELECT gm_text_hash(text), rowid FROM facts WHERE rowid <= "
        "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'text_settled'), 0) ORDER BY 1, 2",
        "DROP TRIGGER facts_text_delete",
        f"""CREATE TRIGGER facts_text_delete AFTER DELETE ON facts BEGIN
            DELETE FROM facts_text WHERE text_hash = gm_text_hash(old.text) AND fact_rowid = old.rowid;
            UPDATE meta SET value = {_LAST_ROWID}
                WHERE key = 'text_settled' AND CAST(value AS INTEGER) > {_LAST_ROWID};
            END""",
        "INSERT OR REPLACE INTO meta(key, value) SELECT 'decay_mark:' || agent_id, coalesce(min(CASE WHEN "
        "decay_due_at IS NULL AND NOT pinned THEN created_at END), max(created_at)) FROM facts "
        "WHERE kind = 'fact' GROUP BY agent_id",
        "DROP INDEX facts_decay_fresh",
        "DROP INDEX facts_listing",
        "CREATE INDEX facts_listing ON facts(agent_id, kind, created_at, superseded_by)",
    ],
    # 8: links, small rows, become one table clustered by id (WITHOUT ROWID) plus the unique index of
    # (agent, source, target, relation): two b-trees instead of a rowid table and two unique indexes, one
    # page less in every store (docs/decisions/0011). No statement read ``links.rowid``; every row is kept.
    8: [
        """CREATE TABLE links_v8 (id TEXT NOT NULL PRIMARY KEY, agent_id TEXT NOT NULL,
            source TEXT NOT NULL, target TEXT NOT NULL, relation TEXT NOT NULL, created_at INTEGER NOT NULL,
            provenance TEXT NOT NULL DEFAULT '{}', UNIQUE (agent_id, source, target, relation))
            WITHOUT ROWID""",
        "INSERT INTO links_v8 SELECT id, agent_id, source, target, relation, created_at, provenance "
        "FROM links",
        "DROP TABLE links",
        "ALTER TABLE links_v8 RENAME TO links",
    ],
    # 9: the compact row (docs/decisions/0011, schema 9; store/sqlite/keys.py): ids as 16 bytes, agents as
    # integer codes given in ``meta``, kinds as 0 / 1, no ``text_hash`` column (unused since 7). The table is
    # copied row for row (same rowids: the full-text index, text keys and vectors stay valid) and its
    # indexes and triggers made again, in short DDL: pending embeddings and tombstones share one partial
    # index, the session index tests the provenance for emptiness before parsing it, and one delete
    # trigger keeps both the full-text index and the text keys.
    9: [
        "CREATE TABLE facts_v9(rowid INTEGER PRIMARY KEY,id BLOB NOT NULL UNIQUE,agent INTEGER NOT NULL,"
        "text TEXT NOT NULL,kind INTEGER NOT NULL DEFAULT 0,equivalents TEXT,created_at INTEGER NOT NULL,"
        "accessed_at INTEGER NOT NULL,access_count INTEGER NOT NULL DEFAULT 0,"
        "weight REAL NOT NULL DEFAULT 1.0,superseded_by TEXT,pinned INTEGER NOT NULL DEFAULT 0,"
        "pinned_at INTEGER,confidence TEXT NOT NULL DEFAULT '',provenance TEXT NOT NULL DEFAULT '',"
        "embed_state INTEGER NOT NULL DEFAULT 0,decay_due_at INTEGER)",
        "INSERT INTO meta(key, value) SELECT 'agent_code:' || agent_id, "
        "row_number() OVER (ORDER BY agent_id) FROM (SELECT DISTINCT agent_id FROM facts)",
        f"INSERT INTO meta(key, value) SELECT 'agent_name:' || value, substr(key, 12) FROM meta {_CODES}",
        f"INSERT INTO meta(key, value) SELECT 'agent_codes', count(*) FROM meta {_CODES}",
        "INSERT INTO facts_v9 SELECT rowid, gm_fact_key(id), (SELECT CAST(value AS INTEGER) FROM meta "
        "WHERE key = 'agent_code:' || f.agent_id), text, CASE kind WHEN 'fact' THEN 0 WHEN 'alias' THEN 1 "
        "ELSE kind END, equivalents, created_at, accessed_at, access_count, weight, superseded_by, pinned, "
        "pinned_at, confidence, provenance, embed_state, decay_due_at FROM facts AS f ORDER BY rowid",
        "DROP TABLE facts",
        "ALTER TABLE facts_v9 RENAME TO facts",
        "CREATE INDEX facts_listing ON facts(agent,kind,created_at,superseded_by)",
        "CREATE INDEX facts_retired ON facts(superseded_by,embed_state) "
        "WHERE superseded_by IS NOT NULL OR embed_state=1",
        f"CREATE INDEX facts_session ON facts(agent,{_SESSION},created_at,id) "
        f"WHERE provenance<>'' AND {_LIVE} AND {_SESSION} IS NOT NULL",
        "CREATE INDEX facts_decay_due ON facts(agent,decay_due_at) "
        "WHERE decay_due_at IS NOT NULL AND NOT pinned AND kind=0",
        f"CREATE TRIGGER facts_delete AFTER DELETE ON facts BEGIN "
        f"INSERT INTO facts_fts(facts_fts,rowid,text) SELECT 'delete',old.rowid,old.text WHERE {_OLD}; "
        "DELETE FROM facts_text WHERE text_hash=gm_text_hash(old.text) AND fact_rowid=old.rowid; "
        f"UPDATE meta SET value={_LAST} WHERE key='text_settled' AND CAST(value AS INTEGER)>{_LAST}; END",
        "CREATE TRIGGER facts_update AFTER UPDATE OF text,kind,superseded_by ON facts BEGIN "
        f"INSERT INTO facts_fts(facts_fts,rowid,text) SELECT 'delete',old.rowid,old.text WHERE {_OLD}; "
        f"INSERT INTO facts_fts(rowid,text) SELECT new.rowid,new.text WHERE {_NEW}; END",
    ],
}


def _read_schema_state(conn: sqlite3.Connection) -> tuple[int, int]:
    """``(user_version, number of schema objects)`` read in one snapshot, retrying lock conflicts.

    One read transaction matters: a concurrent first open commits its tables and the version together,
    so a snapshot never shows tables without the version (which would look like a foreign database).
    """

    def snapshot() -> tuple[int, int]:
        conn.execute("BEGIN")
        try:
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        finally:
            conn.execute("COMMIT")
        return int(version), int(tables)

    return retry_busy(snapshot)


def _check_version(path: Path, version: int, tables: int) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"{path} was written by a newer graymatter (schema {version}, this version reads "
            f"up to {SCHEMA_VERSION}); upgrade graymatter. The database was not modified."
        )
    if version == 0 and tables:
        raise CorruptDatabase(
            f"{path} is an SQLite database but not a graymatter one; move it aside. It was not modified."
        )


def _migrate(db: SQLiteConnections, conn: sqlite3.Connection) -> None:
    retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"))  # needs a moment without other writers
    configure(conn)  # ``gm_text_hash``, which migrations 4 and 7 call, is on every connection (_connect)

    def apply(c: sqlite3.Connection) -> None:
        current = c.execute("PRAGMA user_version").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise SchemaTooNew(f"{db.path} was upgraded by a newer graymatter meanwhile; upgrade graymatter")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[version]:
                c.execute(statement)
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(version),))
            c.execute(f"PRAGMA user_version = {version}")

    db._write(apply)


REWRITES_FACTS = 9
"""The newest migration that copies the whole facts table (schema 9): a store that had data before it keeps
the old table's pages free in the file, about a third of it, until a compaction gives them back."""


def open_schema(db: SQLiteConnections) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`, refusing newer or foreign ones unmodified; return the
    version it had (0 for a new file)."""
    conn = db._connect()
    db._local.conn = conn
    try:
        version, tables = _read_schema_state(conn)
        _check_version(db.path, version, tables)
        if version < SCHEMA_VERSION:
            _migrate(db, conn)
        else:
            configure(conn)
        return version
    except sqlite3.Error as exc:
        db.close()
        raise translate(exc, db.path) from None
    except BaseException:
        db.close()
        raise
