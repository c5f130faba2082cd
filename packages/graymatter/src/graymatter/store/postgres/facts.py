"""PostgreSQL fact writes: conditional tombstones, pins, access counts and pruning, each one transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg

from graymatter.errors import Conflict, InvalidInput
from graymatter.models import Fact
from graymatter.store.base import Vector, Vectors
from graymatter.store.fts import FtsTokenizer
from graymatter.store.postgres.fulltext import insert_facts, unindex
from graymatter.store.postgres.rows import current_model
from graymatter.store.postgres.vectors import PostgresVectors, vector_copy_data
from graymatter.store.rows import CONFLICT, EMBED_DONE, aligned_vectors, embed_state

_AfterUpdate = Callable[[psycopg.Connection[Any], Sequence[str]], None]


class PostgresFactWrites(PostgresVectors):
    """The fact-writing half of the PostgreSQL store (mixed into :class:`PostgresStore`)."""

    _tokenizer: FtsTokenizer

    def add_facts(
        self, facts: Sequence[Fact], vectors: Vectors = None, embedding_model: str | None = None
    ) -> None:
        """One transaction: COPY of the rows and postings, then the usable vectors."""
        aligned = aligned_vectors(facts, vectors)
        if facts:
            self._write(lambda c: self._insert(c, facts, aligned, embedding_model))

    def _insert(
        self,
        c: psycopg.Connection[Any],
        facts: Sequence[Fact],
        aligned: Sequence[Vector | None],
        embedding_model: str | None,
    ) -> None:
        model = current_model(c)
        states = []
        usable: list[tuple[Fact, Vector]] = []
        for fact, vector in zip(facts, aligned, strict=True):
            state = embed_state(fact, model, vector is not None and embedding_model == model)
            states.append(state)
            if state == EMBED_DONE and vector is not None:
                usable.append((fact, vector))
        data = insert_facts(
            c, self._tokenizer, facts, states, lambda: vector_copy_data(usable) if usable else None
        )
        self._put_vectors(c, usable, fresh=True, data=data)

    def replace_facts(
        self,
        fact_ids: Sequence[str],
        replacement: Fact,
        vector: Vector | None = None,
        embedding_model: str | None = None,
    ) -> list[str]:
        """Compare-and-swap in one transaction: the targets are locked live (``FOR UPDATE`` re-checks
        ``superseded_by`` after waiting for a concurrent writer), or ``Conflict`` and nothing changes."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            raise InvalidInput("nothing to replace")

        def work(c: psycopg.Connection[Any]) -> list[str]:
            locked = c.execute(
                "SELECT id FROM gm_facts WHERE id = ANY(%s) AND superseded_by IS NULL ORDER BY id FOR UPDATE",
                (ids,),
            ).fetchall()
            if len(locked) != len(ids):
                raise Conflict(CONFLICT)
            self._insert(c, [replacement], [vector], embedding_model)
            c.execute(
                "UPDATE gm_facts SET superseded_by = %s, embed_state = 0 WHERE id = ANY(%s)",
                (replacement.id, ids),
            )
            unindex(c, sorted(ids))
            return ids

        return self._write(work)

    def import_facts(self, facts: Sequence[Fact]) -> tuple[int, int]:
        """Insert facts whose ids are unknown, skip the others; return ``(added, skipped)``."""

        def work(c: psycopg.Connection[Any]) -> tuple[int, int]:
            model = current_model(c)
            ids = [f.id for f in facts]
            known = {r[0] for r in c.execute("SELECT id FROM gm_facts WHERE id = ANY(%s)", (ids,)).fetchall()}
            fresh = [f for f in dict((f.id, f) for f in facts).values() if f.id not in known]
            insert_facts(
                c, self._tokenizer, fresh, [embed_state(f, model, False) for f in fresh], lambda: None
            )
            return len(fresh), len(facts) - len(fresh)

        return self._write(work) if facts else (0, 0)

    def _update_returning(
        self, ids: list[str], query: str, params: tuple[Any, ...], then: _AfterUpdate | None = None
    ) -> list[str]:
        """Run an ``UPDATE ... RETURNING id``, then ``then`` on the changed ids; those ids in given order."""

        def work(c: psycopg.Connection[Any]) -> list[str]:
            changed = {r[0] for r in c.execute(query, params).fetchall()}
            if then is not None:
                then(c, sorted(changed))
            return [i for i in ids if i in changed]

        return self._write(work) if ids else []

    def supersede(self, fact_ids: Sequence[str], superseded_by: str) -> list[str]:
        """A conditional UPDATE: of two servers revising one fact, only one tombstones it."""
        ids = list(dict.fromkeys(fact_ids))
        query = (
            "UPDATE gm_facts SET superseded_by = %s, embed_state = 0 "
            "WHERE id = ANY(%s) AND superseded_by IS NULL RETURNING id"
        )
        return self._update_returning(ids, query, (superseded_by, ids), unindex)

    def set_pinned(self, fact_ids: Sequence[str], pinned: bool, at: datetime) -> list[str]:
        """Pin or unpin live facts; return the ids changed."""
        ids = list(dict.fromkeys(fact_ids))
        query = (
            "UPDATE gm_facts SET pinned = %s, pinned_at = %s"
            " WHERE id = ANY(%s) AND superseded_by IS NULL AND pinned <> %s RETURNING id"
        )
        return self._update_returning(ids, query, (pinned, at if pinned else None, ids, pinned))

    def record_access(self, fact_ids: Sequence[str], at: datetime) -> None:
        """One write: ``access_count += 1`` and ``accessed_at = at`` for the live facts given."""
        ids = sorted(set(fact_ids))
        if not ids:
            return
        self._bookkeeping_write(
            lambda c: c.execute(
                "UPDATE gm_facts SET access_count = access_count + 1,"
                " accessed_at = greatest(accessed_at, %s) "
                "WHERE id IN (SELECT id FROM gm_facts WHERE id = ANY(%s) AND superseded_by IS NULL "
                "ORDER BY id FOR UPDATE)",
                (at, ids),
            )
        )

    def record_accesses(self, counts: Mapping[str, int], at: datetime) -> None:
        """``access_count += n`` per id: one ``record_access`` write per round of repeated ids (each takes
        its rows' locks in id order, so two writers never deadlock)."""
        for round_ in range(1, max(counts.values(), default=0) + 1):
            self.record_access([i for i, n in counts.items() if n >= round_], at)

    def update_weights(self, weights: dict[str, float]) -> int:
        """Set decayed weights (only ever lowered by callers); return the number of rows changed."""
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

        return self._bookkeeping_write(work)

    def delete_facts(self, fact_ids: Sequence[str]) -> list[str]:
        """Hard-delete unpinned facts (pruning is the only caller); return the ids deleted."""
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []

        def work(c: psycopg.Connection[Any]) -> list[str]:
            locked = [
                r[0]
                for r in c.execute(
                    "SELECT id FROM gm_facts WHERE id = ANY(%s) AND NOT pinned ORDER BY id FOR UPDATE", (ids,)
                ).fetchall()
            ]
            unindex(c, locked)
            c.execute("DELETE FROM gm_facts WHERE id = ANY(%s)", (locked,))
            present = set(locked)
            return [i for i in ids if i in present]

        return self._write(work)
