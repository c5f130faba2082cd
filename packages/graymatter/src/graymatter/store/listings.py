"""Fact listings whose SQL is the same on both backends: by namespace, newest, aliases, pending embeddings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from graymatter.models import Fact
from graymatter.store.base import FactsPage, Kinds
from graymatter.store.paging import PageFilters, PageSpelling, read_page
from graymatter.store.rows import Dialect

T = TypeVar("T")


class SharedListings:
    """Listing methods of the ``Store`` protocol, spelled by the backend's ``Dialect`` (a mixin)."""

    _dialect: Dialect
    _page_spelling: PageSpelling

    if TYPE_CHECKING:

        def _read(self, work: Callable[[Any], T]) -> T: ...

        def _rows_by_ids(self, ids: list[Any], select: str) -> list[Any]: ...

    def _listing(self, where: str, params: Sequence[Any]) -> list[Fact]:
        d = self._dialect
        query = f"SELECT {d.fact_columns} FROM {d.table('facts')} {where}"
        rows = self._read(lambda c: c.execute(query, params).fetchall())
        return [d.decode_fact(r) for r in rows]

    def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        """One lookup by id (chunked where the backend needs it), returned in the order asked."""
        d = self._dialect
        ids = list(dict.fromkeys(fact_ids))
        select = f"SELECT {d.fact_columns} FROM {d.table('facts')} WHERE id {{ids}}"
        rows = self._rows_by_ids(list(map(d.key, ids)), select)
        found = {fact.id: fact for fact in map(d.decode_fact, rows)}
        return [found[i] for i in ids if i in found]

    def supersedes(self, fact_ids: Sequence[str]) -> dict[str, list[str]]:
        """The tombstones pointing at each id, in ``created_at``, id order."""
        ids = list(dict.fromkeys(fact_ids))
        out: dict[str, list[str]] = {}
        select = (
            f"SELECT superseded_by, id FROM {self._dialect.table('facts')} WHERE superseded_by {{ids}}"
            " ORDER BY created_at, id"
        )
        for by, fact_id in self._rows_by_ids(ids, select):
            out.setdefault(by, []).append(self._dialect.ident(fact_id))
        return out

    def rank_info(self, fact_ids: Sequence[str]) -> dict[str, tuple[datetime, str]]:
        """Two columns per live fact, without decoding whole rows."""
        d = self._dialect
        ids = list(dict.fromkeys(fact_ids))
        select = (
            f"SELECT id, created_at, {d.confidence} FROM {d.table('facts')}"
            f" WHERE superseded_by IS NULL AND kind = {d.fact_kind} AND id {{ids}}"
        )
        out: dict[str, tuple[datetime, str]] = {}
        for fact_id, created, confidence in self._rows_by_ids(list(map(d.key, ids)), select):
            moment = d.from_db_time(created)
            if moment is not None:
                out[d.ident(fact_id)] = (moment, confidence)
        return out

    def list_facts(
        self, agent_id: str | None = None, *, include_superseded: bool = True, kinds: Kinds = ("fact",)
    ) -> list[Fact]:
        """Facts in ``created_at``, id order; filtered in SQL."""
        d = self._dialect
        clause, params = d.any_of("kind", d.kinds(kinds))
        clauses = [clause]
        if agent_id is not None:
            clauses.append(d.agent_is())
            params.append(agent_id)
        if not include_superseded:
            clauses.append("superseded_by IS NULL")
        return self._listing(f"WHERE {' AND '.join(clauses)} ORDER BY created_at, id", params)

    def latest_facts(self, agent_id: str, limit: int, *, include_superseded: bool = True) -> list[Fact]:
        """One bounded query, newest first (``created_at`` DESC, id DESC)."""
        d = self._dialect
        live = "" if include_superseded else " AND superseded_by IS NULL"
        where = (
            f"WHERE {d.agent_is()} AND kind = {d.fact_kind}{live} ORDER BY created_at DESC, id DESC "
            f"LIMIT {d.mark}"
        )
        return self._listing(where, (agent_id, limit))

    def aliases(self, agent_ids: Sequence[str]) -> list[Fact]:
        """Live ``alias`` facts of the namespaces, in ``created_at``, id order."""
        if not agent_ids:
            return []
        d = self._dialect
        clause, params = d.agents(agent_ids)
        return self._listing(
            f"WHERE {clause} AND kind = {d.alias_kind} AND superseded_by IS NULL ORDER BY created_at, id",
            params,
        )

    def facts_page(
        self,
        agent_id: str,
        *,
        before: tuple[datetime, str] | None,
        limit: int,
        live: bool | None = True,
        pinned: bool | None = None,
        confidence: str | None = None,
        interface: str | None = None,
        scan: int | None = None,
    ) -> FactsPage:
        """A keyset page, newest first: one index walk from the cursor (``store/paging.py``)."""
        filters = PageFilters(live, pinned, confidence, interface)
        return read_page(self._page_spelling, self._read, agent_id, before, limit, filters, scan)

    def pending_embeddings(self, limit: int) -> list[Fact]:
        """Live facts marked pending, in insertion order."""
        d = self._dialect
        where = f"WHERE embed_state = 1 AND superseded_by IS NULL ORDER BY {d.insertion_order} LIMIT {d.mark}"
        return self._listing(where, (limit,))

    def pending_embedding_count(self) -> int:
        """Live facts marked pending, counted."""
        facts = self._dialect.table("facts")
        query = f"SELECT count(*) FROM {facts} WHERE embed_state = 1 AND superseded_by IS NULL"
        return self._read(lambda c: int(c.execute(query).fetchone()[0]))
