"""What the SQLite layout itself costs per fact, and what a redesign of it would buy (issue 13).

``recall_scale`` times the whole write path (Python included) against FTS5. This benchmark times only
the SQL of a bulk write, so the layout's share is seen apart from the Python around it: batches of 1,000
plain facts, each one transaction of the store's two statements (the row insert a hundred rows to a
statement with the batch's shared values bound once, by the store's own ``execute_rows``, and one
``INSERT ... SELECT`` of their full-text entries), CPU microseconds per fact (median of three
interleaved rounds) and bytes per fact after a checkpoint.

Layouts, each built in an empty directory:

* **schema now**: created by :class:`SQLiteStore` itself, so it is exactly what a new store has;
* the same without the listing index, without the four partial indexes, and without the full-text entry
  (the row and its id index alone): where the time goes;
* **candidate**: the same schema with a 16-byte binary id, an integer agent code (a small ``agents``
  table) and the fact kind stored empty, the three levers ADR 0011 names for bytes;
* **FTS5**: ``recall_scale``'s baseline itself (its ``_grow_fts``), one ``executemany`` per batch into an
  FTS5 table holding the texts.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate_facts, iter_batches
from benchmarks.harness import print_table
from benchmarks.recall_scale import _grow_fts

SIZES = (1_000, 10_000, 100_000)
SIZES_QUICK = (1_000, 5_000)
ROUNDS = 3
BATCH = 1_000
AGENT = "scale-agent"  # recall_scale's agent: the same 11 characters in every row and listing entry
EPOCH_US = 1_796_168_101_689_811
SHARED = (1, 4, 5, 6)
"""The columns every plain row of a bulk write shares (agent, last access, label, provenance), as the store
binds them."""
PARTIAL = ("facts_session", "facts_decay_due", "facts_pending", "facts_superseded_by")

_PLAIN = "INSERT INTO facts (id, {agent}, text, created_at, accessed_at, confidence, provenance) VALUES "
_INDEX = "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE rowid > ? AND {live}"
_CANDIDATE_EDITS = (
    ("id TEXT NOT NULL UNIQUE, agent_id TEXT NOT NULL,", "id BLOB NOT NULL UNIQUE, agent INTEGER NOT NULL,"),
    ("kind TEXT NOT NULL DEFAULT 'fact'", "kind TEXT NOT NULL DEFAULT ''"),
)


def _hash(text: str) -> int:
    return zlib.crc32(text.encode()) & 0xFFFFFF


def _connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.create_function("gm_text_hash", 1, _hash, deterministic=True)
    return conn


def _store_schema(directory: Path) -> Path:
    from graymatter.store.sqlite.store import SQLiteStore

    SQLiteStore(directory).close()
    return directory / "graymatter.db"


def _without(drop: tuple[str, ...]) -> Callable[[Path], Path]:
    def build(directory: Path) -> Path:
        db = _store_schema(directory)
        conn = _connect(db)
        try:
            for index in drop:
                conn.execute(f"DROP INDEX {index}")
        finally:
            conn.close()
        return db

    return build


def _candidate_sql(kind: str, name: str, sql: str) -> str:
    """One object of the store's schema rewritten for the candidate layout; a rewrite that no longer
    applies (the store's DDL changed) raises rather than measure the wrong layout."""
    if name == "facts":
        for old, new in _CANDIDATE_EDITS:
            if old not in " ".join(sql.split()):
                raise RuntimeError(f"the facts table no longer has {old!r}: update _CANDIDATE_EDITS")
            sql = " ".join(sql.split()).replace(old, new)
        return sql
    if kind == "index" and "agent_id" in sql and sql.split(" ON ")[1].startswith("facts("):
        sql = sql.replace("agent_id", "agent")
    return sql.replace("kind = 'fact'", "kind = ''")


def _candidate(directory: Path) -> Path:
    source = _connect(_store_schema(directory / "source"))
    try:
        objects = source.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'facts_fts_%' "
            "AND type != 'trigger' ORDER BY rowid"
        ).fetchall()
        triggers = source.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    finally:
        source.close()
    db = directory / "candidate.db"
    conn = _connect(db)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE agents (code INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE)")
        conn.execute("INSERT INTO agents (id) VALUES (?)", (AGENT,))
        for kind, name, sql in [*objects, *[("trigger", n, s) for n, s in triggers]]:
            conn.execute(_candidate_sql(kind, name, sql))
    finally:
        conn.close()
    return db


def _rows(texts: list[str], start: int, binary: bool) -> list[tuple[Any, ...]]:
    """Plain new facts as the store writes them (time-ordered ids, never accessed, default labels)."""
    rows: list[tuple[Any, ...]] = []
    for offset, text in enumerate(texts):
        moment = EPOCH_US + start + offset
        key = (moment << 64 | int.from_bytes(os.urandom(8), "big")).to_bytes(16, "big")
        fact_id, agent = (key, 1) if binary else (key.hex()[:26].upper(), AGENT)
        rows.append((fact_id, agent, text, moment, 0, "", ""))
    return rows


def _write(db: Path, texts: list[str], candidate: bool, full_text: bool) -> float:
    """CPU microseconds per fact of the store's bulk statements over ``texts``, batch by batch."""
    from graymatter.store.sqlite.rows import execute_rows

    insert = _PLAIN.format(agent="agent" if candidate else "agent_id") + "(?, ?, ?, ?, ?, ?, ?)"
    index = _INDEX.format(live=f"kind = {'' if candidate else 'fact'!r} AND superseded_by IS NULL")
    conn = _connect(db)
    conn.execute("PRAGMA synchronous = NORMAL")
    cpu = 0.0
    try:
        for start, batch in zip(range(0, len(texts), BATCH), iter_batches(texts, BATCH), strict=True):
            rows = _rows(batch, start, candidate)
            began = time.process_time()
            conn.execute("BEGIN IMMEDIATE")
            last = conn.execute("SELECT coalesce(max(rowid), 0) FROM facts").fetchone()[0]
            execute_rows(conn, insert, rows, SHARED)
            if full_text:
                conn.execute(index, (last,))
            conn.execute("COMMIT")
            cpu += time.process_time() - began
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return cpu / len(texts) * 1e6


LAYOUTS: dict[str, tuple[Callable[[Path], Path], bool, bool]] = {
    "schema now": (_store_schema, False, True),
    "  without the listing index": (_without(("facts_listing",)), False, True),
    "  without the partial indexes": (_without(PARTIAL), False, True),
    "  row and id index only": (_without(("facts_listing", *PARTIAL)), False, False),
    "candidate: binary id, agent code, kind empty": (_candidate, True, True),
}
"""Name -> (build the empty database, candidate statements?, write full-text entries?)."""


def _measure(size: int) -> dict[str, dict[str, float]]:
    texts = generate_facts(size, seed=42)
    cpu: dict[str, list[float]] = {name: [] for name in [*LAYOUTS, "FTS5"]}
    size_of: dict[str, float] = {}
    for _ in range(ROUNDS):  # interleaved: every layout once per round
        for name, (build, candidate, full_text) in LAYOUTS.items():
            work = Path(tempfile.mkdtemp(prefix="gm-layout-"))
            try:
                db = build(work / "store")
                cpu[name].append(_write(db, texts, candidate, full_text))
                size_of[name] = db.stat().st_size / size
            finally:
                shutil.rmtree(work)
        work = Path(tempfile.mkdtemp(prefix="gm-layout-"))
        try:
            cpu["FTS5"].append(_grow_fts(work / "fts.db", texts)[1] / size * 1e6)
            size_of["FTS5"] = (work / "fts.db").stat().st_size / size
        finally:
            shutil.rmtree(work)
    return {
        name: {"cpu_us_per_fact": round(statistics.median(values), 2), "bytes_per_fact": round(size_of[name])}
        for name, values in cpu.items()
    }


def run(quick: bool) -> dict[str, Any]:
    """Each layout at each size: SQL CPU per fact and bytes per fact, beside FTS5, with the load average."""
    sizes = SIZES_QUICK if quick else SIZES
    by_size: dict[str, Any] = {}
    for size in sizes:
        by_size[str(size)] = {"layouts": _measure(size), "loadavg_1m": round(os.getloadavg()[0], 2)}
    names = [*LAYOUTS, "FTS5"]
    rows = []
    for name in names:
        row: list[object] = [name]
        for size in sizes:
            cell = by_size[str(size)]["layouts"][name]
            fts = by_size[str(size)]["layouts"]["FTS5"]
            row.append(f"{cell['bytes_per_fact']} ({cell['bytes_per_fact'] / fts['bytes_per_fact']:.2f}x)")
            row.append(f"{cell['cpu_us_per_fact']} ({cell['cpu_us_per_fact'] / fts['cpu_us_per_fact']:.2f}x)")
        rows.append(row)
    headers = ["layout"]
    for size in sizes:
        headers += [f"bytes/fact {size:,} (vs FTS5)", f"SQL CPU us/fact {size:,} (vs FTS5)"]
    loads = ", ".join(f"{size:,}: {by_size[str(size)]['loadavg_1m']}" for size in sizes)
    table = print_table(f"SQLite layout cost of a bulk write, SQL only (load {loads})", headers, rows)
    return {"sizes": list(sizes), "by_size": by_size, "tables": [table]}
