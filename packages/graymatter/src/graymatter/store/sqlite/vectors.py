"""SQLite vectors: unit float32 blobs in the database, searched exactly with numpy from a per-agent cache."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from graymatter.constants import CONFIDENCE_LEVELS
from graymatter.errors import CorruptRecord
from graymatter.models import Fact
from graymatter.numeric import load_numpy
from graymatter.store.base import Confidences, ScoredId, Vector
from graymatter.store.rows import Dialect
from graymatter.store.sqlite.connection import SQLiteConnections
from graymatter.store.sqlite.keys import FACT_COLUMNS, LIVE_SQL, fact_id, fact_key
from graymatter.store.sqlite.rows import chunks, placeholders


class VectorCache:
    """Normalised vectors of one agent held in memory, refreshed incrementally from the database."""

    __slots__ = ("added", "confidences", "matrix", "max_rowid", "removed", "rowids")

    def __init__(self, added: str, removed: str, rowids: Any, confidences: Any, matrix: Any) -> None:
        self.added, self.removed = added, removed
        self.rowids, self.confidences, self.matrix = rowids, confidences, matrix
        self.max_rowid = int(rowids.max()) if len(rowids) else 0


def current_model(c: sqlite3.Connection) -> str | None:
    """The embedding model the stored vectors were made with, or ``None``."""
    row = c.execute("SELECT value FROM meta WHERE key = 'embedding_model'").fetchone()
    return str(row[0]) if row else None


def bump(c: sqlite3.Connection, key: str) -> None:
    """Add one to a counter in ``meta`` (the vector caches watch these)."""
    c.execute(
        "INSERT INTO meta(key, value) VALUES (?, '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (key,),
    )


def put_vector(c: sqlite3.Connection, rowid: int, fact: Fact, vector: Vector) -> None:
    """Store the fact's vector, scaled to unit length."""
    np = load_numpy()

    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    c.execute(
        "INSERT OR REPLACE INTO vectors(fact_rowid, agent_id, confidence, vec) VALUES (?,?,?,?)",
        (rowid, fact.agent_id, CONFIDENCE_LEVELS.get(fact.confidence, 0), array.tobytes()),
    )


def _mixed(agent_id: str) -> CorruptRecord:
    return CorruptRecord(f"vectors of agent {agent_id!r} have mixed dimensions; re-embed the store")


class SQLiteVectors(SQLiteConnections):
    """The embedding half of the SQLite store (mixed into :class:`SQLiteStore`)."""

    _vector_cache: dict[str, VectorCache]
    _vector_lock: threading.Lock
    _dialect: Dialect

    def embedding_model(self) -> str | None:
        """The model id the stored vectors were made with, or ``None``."""
        return self._read(current_model)

    def reset_embeddings(self, model: str | None) -> int:
        """Switch to ``model``: drop every vector, mark live facts pending (none when ``model`` is None)."""

        def work(c: sqlite3.Connection) -> int:
            agents = [r[0] for r in c.execute("SELECT DISTINCT agent_id FROM vectors").fetchall()]
            c.execute("DELETE FROM vectors")
            for agent in agents:
                bump(c, f"vec_removed:{agent}")
            if model is None:
                c.execute("DELETE FROM meta WHERE key = 'embedding_model'")
                c.execute("UPDATE facts SET embed_state = 0 WHERE embed_state != 0")
                return 0
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)", (model,))
            return c.execute(f"UPDATE facts SET embed_state = 1 WHERE {LIVE_SQL.format(row='')}").rowcount

        with self._vector_lock:
            self._vector_cache.clear()
        return self._write(work)

    def set_vectors(self, items: Iterable[tuple[str, Vector]], model: str) -> int:
        """Store vectors for facts (clears their pending mark); ignored if ``model`` is not current."""
        pairs = list(items)

        def work(c: sqlite3.Connection) -> int:
            if current_model(c) != model:
                return 0
            stored = 0
            agents: set[str] = set()
            for wanted, vector in pairs:
                row = c.execute(
                    f"SELECT rowid, {FACT_COLUMNS} FROM facts WHERE id = ? AND {LIVE_SQL.format(row='')}",
                    (fact_key(wanted),),
                ).fetchone()
                if row is None:
                    continue
                fact = self._dialect.decode_fact(row[1:])
                put_vector(c, row[0], fact, vector)
                c.execute("UPDATE facts SET embed_state = 2 WHERE rowid = ?", (row[0],))
                agents.add(fact.agent_id)
                stored += 1
            for agent in agents:  # vectors of older rows: the in-memory cache must reload in full
                bump(c, f"vec_removed:{agent}")
            return stored

        return self._write(work) if pairs else 0

    def _vector_matrix(self, c: sqlite3.Connection, agent_id: str) -> VectorCache:
        marks = dict(
            c.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?)",
                (f"vec_added:{agent_id}", f"vec_removed:{agent_id}"),
            ).fetchall()
        )
        added, removed = marks.get(f"vec_added:{agent_id}", "0"), marks.get(f"vec_removed:{agent_id}", "0")
        with self._vector_lock:
            cache = self._vector_cache.get(agent_id)
        if cache is not None and cache.added == added and cache.removed == removed:
            return cache
        base = cache if cache is not None and cache.removed == removed else None
        fresh = c.execute(
            "SELECT fact_rowid, confidence, vec FROM vectors WHERE agent_id = ? AND fact_rowid > ? "
            "ORDER BY fact_rowid",
            (agent_id, base.max_rowid if base is not None else -1),
        ).fetchall()
        cache = _extend(agent_id, added, removed, base, fresh)
        with self._vector_lock:
            self._vector_cache[agent_id] = cache
        return cache

    def vector_search(
        self, agent_ids: Sequence[str], query: Vector, model: str, limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """Exact: one matrix product per namespace over its cached unit vectors."""
        np = load_numpy()

        if not agent_ids or limit <= 0 or confidences == []:
            return []
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0 or not np.isfinite(norm):
            return []
        q = q / norm
        allowed = (
            None if confidences is None else np.array([CONFIDENCE_LEVELS[c] for c in confidences], np.int8)
        )

        def work(c: sqlite3.Connection) -> list[ScoredId]:
            if current_model(c) != model:
                return []
            pooled: list[tuple[float, int]] = []
            for agent in dict.fromkeys(agent_ids):
                pooled.extend(_nearest(self._vector_matrix(c, agent), q, allowed, limit))
            return _rank(c, pooled, limit) if pooled else []

        return self._read(work)


def _extend(
    agent_id: str, added: str, removed: str, base: VectorCache | None, fresh: list[Any]
) -> VectorCache:
    """``base`` (or nothing) followed by the ``fresh`` vector rows, as one cache."""
    np = load_numpy()

    rowids = np.fromiter((r[0] for r in fresh), dtype=np.int64, count=len(fresh))
    confs = np.fromiter((r[1] for r in fresh), dtype=np.int8, count=len(fresh))
    if len({len(r[2]) for r in fresh}) > 1:
        raise _mixed(agent_id)
    if fresh:
        # An owned, writeable copy: matmul on a read-only frombuffer view skips BLAS (80x slower).
        raw = np.frombuffer(b"".join(r[2] for r in fresh), dtype=np.float32)
        matrix = raw.reshape(len(fresh), -1).copy()
    else:
        matrix = np.zeros((0, base.matrix.shape[1] if base is not None else 0), dtype=np.float32)
    if base is not None and len(base.rowids):
        if fresh and base.matrix.shape[1] != matrix.shape[1]:
            raise _mixed(agent_id)
        rowids = np.concatenate([base.rowids, rowids])
        confs = np.concatenate([base.confidences, confs])
        matrix = np.concatenate([base.matrix, matrix]) if fresh else base.matrix
    return VectorCache(added, removed, rowids, confs, matrix)


def _nearest(cache: VectorCache, q: Any, allowed: Any, limit: int) -> list[tuple[float, int]]:
    """``(similarity, rowid)`` of the agent's ``limit`` best vectors among the allowed confidences."""
    np = load_numpy()

    if not len(cache.rowids) or cache.matrix.shape[1] != q.shape[0]:
        return []
    sims = cache.matrix @ q
    if allowed is not None:
        sims = np.where(np.isin(cache.confidences, allowed), sims, -np.inf)
    take = min(limit, len(sims))
    top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
    values = sims[top]
    keep = np.isfinite(values)
    return list(zip(values[keep].tolist(), cache.rowids[top][keep].tolist(), strict=True))


def _rank(c: sqlite3.Connection, pooled: list[tuple[float, int]], limit: int) -> list[ScoredId]:
    """The pooled candidates that are still live, best first (then oldest, then id)."""
    rowids = [r for _, r in pooled]
    meta: dict[int, tuple[str, int]] = {}
    for chunk in chunks(rowids):
        for rowid, key, created in c.execute(
            f"SELECT rowid, id, created_at FROM facts WHERE superseded_by IS NULL AND rowid IN "
            f"({placeholders(len(chunk))})",
            list(chunk),
        ).fetchall():
            meta[rowid] = (fact_id(key), created)
    ranked = sorted((-s, meta[r][1], meta[r][0]) for s, r in pooled if r in meta)
    return [ScoredId(found, -neg) for neg, _, found in ranked[:limit]]
