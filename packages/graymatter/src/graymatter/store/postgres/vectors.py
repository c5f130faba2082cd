"""PostgreSQL vectors: pgvector cosine search over an HNSW index built for the current model's dimension."""

from __future__ import annotations

import contextlib
import math
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import sql as pgsql

from graymatter.errors import InvalidInput
from graymatter.models import Fact
from graymatter.store.base import Confidences, ScoredId, Vector
from graymatter.store.postgres.connection import PostgresConnections
from graymatter.store.postgres.rows import current_model, decode_fact, one
from graymatter.store.rows import FACT_COLUMNS

HNSW_INDEX = (
    "CREATE INDEX {exists}gm_vectors_hnsw ON gm_vectors"
    " USING hnsw ((embedding::halfvec({dim})) halfvec_cosine_ops) WITH (ef_construction = 32)"
)
"""The graph is built over half-precision copies (about half the size and build time of full precision,
and ef_construction 32 instead of 64 halves it again); searches re-rank its candidates in full precision."""
_SEARCH_SQL = (
    "SELECT v.fact_id, 1 - ({distance}) AS sim, f.created_at FROM gm_vectors v "
    "JOIN gm_facts f ON f.id = v.fact_id "
    "WHERE v.agent_id = ANY(%s){clause} AND f.superseded_by IS NULL "
    "ORDER BY {order} LIMIT %s"
)
_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_BINARY_TRAILER = struct.pack(">h", -1)


def rerank_margin(limit: int) -> int:
    """Candidates read past ``limit`` from the half-precision order, so the full-precision order of the
    best ``limit`` is exact whenever the two orders differ only among near-ties."""
    return max(16, limit // 4)


def unit_matrix(vectors: Sequence[Vector]) -> Any:
    """The vectors as float32 rows of unit length (non-finite values as 0; zero vectors kept as they are)."""
    import numpy as np

    try:
        matrix = np.array(vectors, dtype=np.float64)
    except ValueError:
        matrix = None
    if matrix is None or matrix.ndim != 2:
        raise InvalidInput("vectors of one batch must have the same dimension")
    matrix[~np.isfinite(matrix)] = 0.0
    norms = np.sqrt((matrix * matrix).sum(axis=1))
    norms[norms == 0] = 1.0
    return (matrix / norms[:, None]).astype(">f4")


def _text_field(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def vector_copy_data(items: Sequence[tuple[Fact, Vector]]) -> bytes:
    """A binary COPY stream of ``gm_vectors`` rows: pgvector's wire format is the dimension, a zero and
    the big-endian float32 values."""
    matrix = unit_matrix([v for _, v in items])
    dim = matrix.shape[1]
    vector_head = struct.pack(">ihh", 4 + 4 * dim, dim, 0)
    field_count = struct.pack(">h", 4)
    tails: dict[tuple[str, str], bytes] = {}  # the agent and confidence fields, shared by most rows
    parts = [_BINARY_HEADER]
    data = matrix.tobytes()
    width = 4 * dim
    for n, (fact, _) in enumerate(items):
        key = (fact.agent_id, fact.confidence)
        tail = tails.get(key)
        if tail is None:
            tail = tails[key] = _text_field(fact.agent_id) + _text_field(fact.confidence) + vector_head
        parts += (field_count, _text_field(fact.id), tail, data[n * width : (n + 1) * width])
    parts.append(_BINARY_TRAILER)
    return b"".join(parts)


def _vector_literal(vector: Vector) -> str:
    values = [float(v) for v in vector]
    norm = math.sqrt(sum(v * v for v in values))
    if norm > 0 and math.isfinite(norm):
        values = [v / norm for v in values]
    return "[" + ",".join(repr(v) if math.isfinite(v) else "0" for v in values) + "]"


def _hnsw_index(dim: int, *, if_missing: bool) -> pgsql.Composed:
    template = HNSW_INDEX.replace("{exists}", "IF NOT EXISTS " if if_missing else "")
    return pgsql.SQL(template).format(dim=pgsql.Literal(dim))


def _nearest(
    c: psycopg.Connection[Any], values: list[float], dim: int, agent_ids: Sequence[str], limit: int,
    confidences: Sequence[str] | None,
) -> list[Any]:  # fmt: skip
    """``(fact id, similarity, created_at)`` rows of pgvector's iterative HNSW scan over the half-precision
    graph, in strict order, ``limit`` plus a margin (similarity in full precision). One round trip."""
    ef_search = pgsql.Literal(min(1000, max(100, 2 * limit)))
    dims = pgsql.Literal(dim)
    distance = pgsql.SQL("embedding::vector({dim}) <=> %s::vector({dim})").format(dim=dims)
    order = pgsql.SQL("v.embedding::halfvec({dim}) <=> %s::halfvec({dim})").format(dim=dims)
    clause = pgsql.SQL("")
    params: list[Any] = [_vector_literal(values), list(agent_ids)]
    if confidences is not None:
        clause = pgsql.SQL(" AND v.confidence = ANY(%s)")
        params.append(list(confidences))
    params.extend([_vector_literal(values), limit + rerank_margin(limit)])
    query = pgsql.SQL(_SEARCH_SQL).format(distance=distance, clause=clause, order=order)
    with c.pipeline(), c.transaction():
        c.execute(pgsql.SQL("SET LOCAL hnsw.ef_search = {}").format(ef_search))
        c.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        found = c.execute(query, params)
    return found.fetchall()


class PostgresVectors(PostgresConnections):
    """The embedding half of the PostgreSQL store (mixed into :class:`PostgresStore`)."""

    _defer_index: bool

    def _put_vectors(
        self,
        c: psycopg.Connection[Any],
        items: Sequence[tuple[Fact, Vector]],
        *,
        fresh: bool = False,
        data: bytes | None = None,
    ) -> None:
        """Store unit-length vectors by binary COPY (replacing any the facts had, unless ``fresh``);
        ``data``: the COPY stream of ``items`` (:func:`vector_copy_data`), when made beforehand."""
        if not items:
            return
        dim = len(items[0][1])
        if any(len(v) != dim for _, v in items):
            raise InvalidInput("vectors of one batch must have the same dimension")
        self._ensure_vector_index(c, dim)
        if not fresh:
            c.execute("DELETE FROM gm_vectors WHERE fact_id = ANY(%s)", ([f.id for f, _ in items],))
        with (
            c.cursor() as cur,
            cur.copy(
                "COPY gm_vectors (fact_id, agent_id, confidence, embedding) FROM STDIN (FORMAT BINARY)"
            ) as copy,
        ):
            copy.write(vector_copy_data(items) if data is None else data)

    def _ensure_vector_index(self, c: psycopg.Connection[Any], dim: int) -> None:
        """Check the batch's dimension against the stored one; the first vectors of a dimension create its
        graph. The common case shares the dimension's row lock, so writers of vectors do not wait for each
        other's commits; only a change of dimension (or a first one) takes it exclusively."""
        row = c.execute("SELECT value FROM gm_meta WHERE key = 'embedding_dim' FOR SHARE").fetchone()
        if row is not None and int(row[0]) == dim:
            return
        row = c.execute("SELECT value FROM gm_meta WHERE key = 'embedding_dim' FOR UPDATE").fetchone()
        if row is not None and int(row[0]) == dim:
            return
        if row is not None and one(c.execute("SELECT EXISTS (SELECT 1 FROM gm_vectors)").fetchone())[0]:
            raise InvalidInput(
                f"vector dimension {dim} differs from the stored vectors' ({row[0]}); re-embed first"
            )
        c.execute("DROP INDEX IF EXISTS gm_vectors_hnsw")
        if not self._defer_index:
            c.execute(_hnsw_index(dim, if_missing=False))
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
                    c.execute(_hnsw_index(int(row[0]), if_missing=True))

            self._write(rebuild)

    def analyze(self) -> None:
        """After a bulk load: refresh planner statistics and the visibility map (so the postings are read
        by index-only scans); autovacuum does both eventually."""
        with self.pool.connection() as conn:  # not in a pipeline: VACUUM runs outside any transaction
            conn.execute("VACUUM (ANALYZE) gm_facts, gm_postings, gm_terms, gm_vectors")

    def embedding_model(self) -> str | None:
        """The model id the stored vectors were made with, or ``None``."""
        return self._read(current_model)

    def reset_embeddings(self, model: str | None) -> int:
        """Switch to ``model``: drop every vector, mark live facts pending (none when ``model`` is None)."""

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
            c.execute(
                "UPDATE gm_facts SET embed_state = 0 WHERE embed_state <> 0 AND NOT "
                "(kind = 'fact' AND superseded_by IS NULL)"
            )
            return c.execute(
                "UPDATE gm_facts SET embed_state = 1 WHERE kind = 'fact' AND superseded_by IS NULL"
            ).rowcount

        return self._write(work)

    def set_vectors(self, items: Iterable[tuple[str, Vector]], model: str) -> int:
        """Store vectors for facts (clears their pending mark); ignored if ``model`` is not current."""
        pairs = list(items)
        if not pairs:
            return 0

        def work(c: psycopg.Connection[Any]) -> int:
            if current_model(c) != model:
                return 0
            wanted = dict(pairs)
            rows = c.execute(
                f"SELECT {FACT_COLUMNS} FROM gm_facts WHERE id = ANY(%s) AND superseded_by IS NULL "
                "AND kind = 'fact' ORDER BY id FOR UPDATE",
                (list(wanted),),
            ).fetchall()
            facts = [decode_fact(r) for r in rows]
            self._put_vectors(c, [(f, wanted[f.id]) for f in facts])
            c.execute("UPDATE gm_facts SET embed_state = 2 WHERE id = ANY(%s)", ([f.id for f in facts],))
            return len(facts)

        return self._write(work)

    def vector_search(
        self, agent_ids: Sequence[str], query: Vector, model: str, limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """Approximate: pgvector's HNSW index, scanned iteratively so filters do not starve the list."""
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
            rows = _nearest(c, values, dim, agent_ids, limit, confidences)
            ranked = sorted((-float(sim), created, fid) for fid, sim, created in rows if sim is not None)
            return [ScoredId(fid, -neg) for neg, _, fid in ranked if math.isfinite(neg)][:limit]

        return self._read(work)
