"""The store as one recall sees it: each fact read once, and what a keyword search read kept for the rest."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import cast

from graymatter.models import Fact
from graymatter.store.base import Confidences, ScoredId, Store

_RankedSearch = Callable[
    [Sequence[str], Sequence[str], int, Sequence[str] | None],
    tuple[list[ScoredId], dict[str, tuple[datetime, str]], dict[str, str]],
]
"""A store's ``keyword_search_ranked``: the hits, and the ``rank_info`` and text of each, from one read."""
_RankedScores = Callable[
    [Sequence[str], Sequence[str], int, Sequence[str] | None],
    tuple[list[tuple[str, float]], dict[str, tuple[datetime, str]], dict[str, str], set[str]],
]
"""A store's ``keyword_scores_ranked``: ``keyword_search_ranked`` with ``(id, score)`` pairs, and the hits
written without a session."""
_Texts = Callable[[Sequence[str]], dict[str, str]]
"""A store's ``fact_texts``."""


class RecallReads:
    """The store as one recall sees it: facts read once are not read again (``get_facts``); the rank columns
    and texts of facts already read, or returned by a keyword search that read them in the same statement
    (``keyword_search_ranked``), come from what was read (``rank_info``, ``fact_texts``); everything else
    goes to the store."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._facts: dict[str, Fact | None] = {}
        self._ranks: dict[str, tuple[datetime, str]] = {}
        self._texts: dict[str, str] = {}
        self._sessionless: set[str] = set()

    def keyword_search(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[ScoredId]:
        """``Store.keyword_search``, remembering what :meth:`keyword_scores` remembers."""
        scores = self.keyword_scores(agent_ids, terms, limit, confidences)
        return [ScoredId(fid, score) for fid, score in scores]

    def keyword_scores(
        self, agent_ids: Sequence[str], terms: Sequence[str], limit: int, confidences: Confidences = None
    ) -> list[tuple[str, float]]:
        """``Store.keyword_search`` as ``(id, score)`` pairs; a store that reads its hits' rank columns and
        texts in the same statement (``keyword_scores_ranked``, ``keyword_search_ranked``) answers
        ``rank_info`` and ``fact_texts`` for them."""
        light = getattr(self._store, "keyword_scores_ranked", None)
        if light is not None:
            scores, rows, texts, sessionless = cast(_RankedScores, light)(
                agent_ids, terms, limit, confidences
            )
            self._sessionless.update(sessionless)
        else:
            ranked = getattr(self._store, "keyword_search_ranked", None)
            if ranked is None:
                hits = self._store.keyword_search(agent_ids, terms, limit, confidences)
                return [(hit.fact_id, hit.score) for hit in hits]
            found, rows, texts = cast(_RankedSearch, ranked)(agent_ids, terms, limit, confidences)
            scores = [(hit.fact_id, hit.score) for hit in found]
        self._ranks.update(rows)
        self._texts.update(texts)
        return scores

    def fact_texts(self, fact_ids: Sequence[str]) -> dict[str, str]:
        """Texts by id: those the keyword search read, the rest through the store's ``fact_texts`` (two
        columns) when it has one, else from the facts read (``get_facts``, so they are read once)."""
        texts = self._texts
        try:  # the usual case: the keyword searches read them all
            return {fid: texts[fid] for fid in fact_ids}
        except KeyError:
            pass
        missing = [fid for fid in dict.fromkeys(fact_ids) if fid not in self._texts]
        light = cast(_Texts | None, getattr(self._store, "fact_texts", None))
        if missing and light is not None:
            self._texts.update(light(missing))
        elif missing:
            self._texts.update((fact.id, fact.text) for fact in self.get_facts(missing))
        return {fid: self._texts[fid] for fid in fact_ids if fid in self._texts}

    def any_turn(self, fact_ids: Collection[str]) -> bool:
        """Whether any of ``fact_ids`` may be a conversation turn: not read by a keyword search as written
        without a session (:meth:`neighbours` would ask the store about none of them otherwise)."""
        return not self._sessionless.issuperset(fact_ids)

    def neighbours(self, fact_ids: Sequence[str], window: int) -> dict[str, list[str]]:
        """``Store.neighbours``, not asked about facts a keyword search read as written without a session
        (the store leaves them out): no statement when none of ``fact_ids`` is a conversation turn."""
        asked = [fid for fid in fact_ids if fid not in self._sessionless]
        return self._store.neighbours(asked, window) if asked else {}

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        """``Store.get_facts``, each id asked of the store at most once per recall."""
        ids = list(dict.fromkeys(fact_ids))
        missing = [fid for fid in ids if fid not in self._facts]
        if missing:
            self._facts.update(dict.fromkeys(missing))
            self._facts.update((fact.id, fact) for fact in self._store.get_facts(missing))
        return [fact for fid in ids if (fact := self._facts[fid]) is not None]

    def rank_info(self, fact_ids: Sequence[str]) -> dict[str, tuple[datetime, str]]:
        """``Store.rank_info``, answered from the facts already read where it can be."""
        ranks = self._ranks
        if not self._facts:
            try:  # the usual case: the keyword searches read them all (a repeated id keeps its first place)
                return {fid: ranks[fid] for fid in fact_ids}
            except KeyError:
                pass
        ids = list(dict.fromkeys(fact_ids))
        rest = self._store.rank_info([f for f in ids if f not in self._facts and f not in ranks])
        rest.update(self._ranks)
        out: dict[str, tuple[datetime, str]] = {}
        for fid in ids:
            if fid not in self._facts:
                if fid in rest:
                    out[fid] = rest[fid]
            elif (fact := self._facts[fid]) is not None and fact.live and fact.kind == "fact":
                out[fid] = (fact.created_at, fact.confidence)
        return out


def fact_loader(store: Store, allowed: set[str] | None) -> Callable[[Sequence[str]], dict[str, Fact]]:
    """``load(ids)`` for fusion's selection: the live ``fact``-kind facts among ``ids`` (decoded once)."""
    loaded: dict[str, Fact] = {}

    def load(ids: Sequence[str]) -> dict[str, Fact]:
        missing = [fid for fid in ids if fid not in loaded]
        if missing:
            loaded.update((f.id, f) for f in store.get_facts(missing))
        return {
            fid: fact
            for fid in ids
            if (fact := loaded.get(fid)) is not None
            and fact.live
            and fact.kind == "fact"
            and (allowed is None or fact.confidence in allowed)
        }

    return load
