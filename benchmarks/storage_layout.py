"""What the SQLite layout itself costs per fact, beside FTS5 and beside the layout before it (issue 13).

``recall_scale`` times the whole write path (Python included) against FTS5. This benchmark times only
the SQL of a bulk write, so the layout's share is seen apart from the Python around it: batches of 1,000
plain facts, each one transaction of the store's two statements (the row insert a hundred rows to a
statement with the batch's shared values bound once, by the store's own ``execute_rows``, and one
``INSERT ... SELECT`` of their full-text entries), CPU microseconds per fact (median of three
interleaved rounds) and bytes per fact after a checkpoint.

Layouts, each built in an empty directory:

* **schema 9 (now)**: created by :class:`SQLiteStore` itself, so it is exactly what a new store has: a
  ULID id in 16 bytes, the agent as an integer code, the kind as 0 / 1 (docs/decisions/0011, schema 9);
* the same without the listing index, without the three partial indexes, and without the full-text entry
  (the row and its id index alone): where the time goes;
* **schema 8 (before)**: the store's migrations 1 to 8 applied to an empty file, the layout every store had
  before schema 9 (the id in 26 characters, the agent's name, the kind as a word) with its indexes;
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
AGENT = "scale-agent"  # recall_scale's agent: 11 characters in every schema-8 row and listing entry
EPOCH_US = 1_796_168_101_689_811
SHARED = (1, 4, 5, 6, 7)
"""The columns every plain row of a bulk write shares (agent, last access, access count, label, provenance),
as the store binds them."""
PARTIAL = ("facts_session", "facts_decay_due", "facts_retired")

_PLAIN = (
    "INSERT INTO facts (id, {agent}, text, created_at, accessed_at, access_count, confidence, provenance) "
    "VALUES "
)
_INDEX = "INSERT INTO facts_fts(rowid, text) SELECT rowid, text FROM facts WHERE rowid > ? AND {live}"


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


def _schema8(directory: Path) -> Path:
    """An empty file with the store's migrations 1 to 8 applied: the layout before schema 9."""
    from graymatter.store.sqlite.schema import _MIGRATIONS

    directory.mkdir(parents=True)
    db = directory / "graymatter.db"
    conn = _connect(db)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN")
        for version in range(1, 9):
            for statement in _MIGRATIONS[version]:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 8")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return db


def _rows(texts: list[str], start: int, compact: bool) -> list[tuple[Any, ...]]:
    """Plain new facts as the store writes them (time-ordered ids, never accessed, default labels): in
    schema 9 the id's 16 bytes and the agent's code, in schema 8 the id's 26 characters and the name."""
    rows: list[tuple[Any, ...]] = []
    for offset, text in enumerate(texts):
        moment = EPOCH_US + start + offset
        key = (moment << 64 | int.from_bytes(os.urandom(8), "big")).to_bytes(16, "big")
        fact_id, agent = (key, 1) if compact else (key.hex()[:26].upper(), AGENT)
        rows.append((fact_id, agent, text, moment, 0, 0, "", ""))
    return rows


def _write(db: Path, texts: list[str], compact: bool, full_text: bool) -> float:
    """CPU microseconds per fact of the store's bulk statements over ``texts``, batch by batch (``compact``:
    schema 9's rows, else schema 8's)."""
    from graymatter.store.sqlite.rows import execute_rows

    insert = _PLAIN.format(agent="agent" if compact else "agent_id") + "(?, ?, ?, ?, ?, ?, ?, ?)"
    index = _INDEX.format(live=f"kind = {0 if compact else repr('fact')} AND superseded_by IS NULL")
    conn = _connect(db)
    conn.execute("PRAGMA synchronous = NORMAL")
    cpu = 0.0
    try:
        for start, batch in zip(range(0, len(texts), BATCH), iter_batches(texts, BATCH), strict=True):
            rows = _rows(batch, start, compact)
            began = time.process_time()
            conn.execute("BEGIN IMMEDIATE")
            last = conn.execute("SELECT coalesce(max(rowid), 0) FROM facts").fetchone()[0]
            execute_rows(conn, insert, rows, (SHARED,))
            if full_text:
                conn.execute(index, (last,))
            conn.execute("COMMIT")
            cpu += time.process_time() - began
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return cpu / len(texts) * 1e6


LAYOUTS: dict[str, tuple[Callable[[Path], Path], bool, bool]] = {
    "schema 9 (now)": (_store_schema, True, True),
    "  without the listing index": (_without(("facts_listing",)), True, True),
    "  without the partial indexes": (_without(PARTIAL), True, True),
    "  row and id index only": (_without(("facts_listing", *PARTIAL)), True, False),
    "schema 8 (before)": (_schema8, False, True),
}
"""Name -> (build the empty database, schema 9's rows?, write full-text entries?)."""


def _measure(size: int) -> dict[str, dict[str, float]]:
    texts = generate_facts(size, seed=42)
    cpu: dict[str, list[float]] = {name: [] for name in [*LAYOUTS, "FTS5"]}
    size_of: dict[str, float] = {}
    for _ in range(ROUNDS):  # interleaved: every layout once per round
        for name, (build, compact, full_text) in LAYOUTS.items():
            work = Path(tempfile.mkdtemp(prefix="gm-layout-"))
            try:
                db = build(work / "store")
                cpu[name].append(_write(db, texts, compact, full_text))
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


def _upgrade(size: int) -> dict[str, float]:
    """A schema-8 store of ``size`` facts migrated in place (``schema.open_schema``), then compacted
    (``SQLiteStore.compact``, which opening an older store runs once after the migration): bytes per fact
    after each step, and the seconds each took."""
    from graymatter.store.sqlite import schema
    from graymatter.store.sqlite.connection import SQLiteConnections
    from graymatter.store.sqlite.files import database_bytes
    from graymatter.store.sqlite.store import SQLiteStore

    work = Path(tempfile.mkdtemp(prefix="gm-upgrade-"))
    try:
        db = _schema8(work / "store")
        _write(db, generate_facts(size, seed=42), compact=False, full_text=True)
        before = db.stat().st_size
        connections = SQLiteConnections(db)
        try:
            began = time.perf_counter()
            schema.open_schema(connections)
            migrate_s = time.perf_counter() - began
            connections._read(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
        finally:
            connections.close()
        migrated = database_bytes(db)
        with SQLiteStore(work / "store") as store:  # schema 9 already: nothing more happens on open
            began = time.perf_counter()
            _, compacted = store.compact()
            compact_s = time.perf_counter() - began
    finally:
        shutil.rmtree(work)
    return {
        "schema8_bytes_per_fact": round(before / size),
        "migrated_bytes_per_fact": round(migrated / size),
        "compacted_bytes_per_fact": round(compacted / size),
        "migrate_s": round(migrate_s, 3),
        "compact_s": round(compact_s, 3),
    }


def _upgrade_table(sizes: tuple[int, ...], by_size: dict[str, Any]) -> str:
    rows = []
    for size in sizes:
        up, layouts = by_size[str(size)]["upgrade"], by_size[str(size)]["layouts"]
        new, fts = layouts["schema 9 (now)"]["bytes_per_fact"], layouts["FTS5"]["bytes_per_fact"]
        rows.append([
            f"{size:,}", up["schema8_bytes_per_fact"],
            f"{up['migrated_bytes_per_fact']} ({up['migrated_bytes_per_fact'] / fts:.2f}x)",
            f"{up['compacted_bytes_per_fact']} ({up['compacted_bytes_per_fact'] / fts:.2f}x)",
            f"{new} ({new / fts:.2f}x)", f"{up['migrate_s']:.2f} / {up['compact_s']:.2f}",
        ])  # fmt: skip
    headers = [
        "facts", "schema 8 bytes/fact", "migrated alone (vs FTS5)", "then compacted (vs FTS5)",
        "a new schema-9 store (vs FTS5)", "migration / compact s",
    ]  # fmt: skip
    return print_table(
        "Upgrading a schema-8 store: bytes per fact after the migration and after `compact`", headers, rows
    )


def run(quick: bool) -> dict[str, Any]:
    """Each layout at each size: SQL CPU per fact and bytes per fact, beside FTS5, with the load average;
    then a schema-8 store of each size migrated and compacted."""
    sizes = SIZES_QUICK if quick else SIZES
    by_size: dict[str, Any] = {}
    for size in sizes:
        by_size[str(size)] = {"layouts": _measure(size), "loadavg_1m": round(os.getloadavg()[0], 2)}
        by_size[str(size)]["upgrade"] = _upgrade(size)
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
    return {"sizes": list(sizes), "by_size": by_size, "tables": [table, _upgrade_table(sizes, by_size)]}
