"""The state every part of the ``Memory`` facade shares: store, config, embedder, background, checks."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel

from graymatter import validation as check
from graymatter.config import MemoryConfig
from graymatter.constants import DATA_DIR_ENV, DEFAULT_DATA_DIR, Confidence
from graymatter.engine.access_log import AccessLog
from graymatter.engine.background import BackgroundConsolidator
from graymatter.engine.embedding_index import REEMBED_BATCH, EmbeddingIndex, open_index
from graymatter.engine.embeddings import Embedder, resolve_embedder
from graymatter.engine.lifecycle import Summariser, consolidate
from graymatter.ids import new_ulid_run
from graymatter.models import ConsolidationReport, Fact, Provenance, utcnow
from graymatter.store import Store, open_store
from graymatter.store.rows import NewFacts

_DEFAULT: Any = object()
_ONE_US = timedelta(microseconds=1)

BACKGROUND_WAIT_S = 30.0
"""How long closing a memory, or waiting for it, lets background consolidation finish by default."""


_gc_lock = threading.Lock()
_gc_pauses = [0, False]  # [nested pauses running, whether the collector was enabled before the first]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a bulk write or an import (nesting and threads safe).

    Such a call allocates some objects per fact (models, rows, parsed JSON), none of them cyclic, and each
    allocation burst makes the collector traverse every tracked object of the process, a cost that grows
    with the process's heap, not with the batch: validating a 100k-fact bundle took 11.3 us per fact with
    it running, 3.7 with it paused. It resumes (if it was enabled) when the last pause ends.
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if _gc_pauses[0] == 0 and _gc_pauses[1]:
                gc.enable()


def default_data_dir() -> Path:
    """``$GRAYMATTER_DIR`` if set, else ``./.graymatter``."""
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


class MemoryCore:
    """Opens and closes a memory; the API parts (writes, recall, checkpoints) build on it.

    ``data_dir`` is the embedded SQLite store's directory (default ``$GRAYMATTER_DIR`` or
    ``./.graymatter``); ``store=`` uses another backend. ``embedder`` defaults to what
    ``config.embedding`` selects; ``None`` means keyword-only.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        embedder: Embedder | None = _DEFAULT,
        config: MemoryConfig | None = None,
        summariser: Summariser | None = _DEFAULT,
        on_consolidate_error: Callable[[str, Exception], None] | None = None,
    ) -> None:
        self.config = config if config is not None else MemoryConfig.from_env()
        if store is None:
            store = open_store(data_dir if data_dir is not None else default_data_dir())
        self.store: Store = store
        self.data_dir: Path | None = store.data_dir
        """The store's directory (embedded SQLite), else ``None``."""
        self._closed = False
        self._access = AccessLog(store)
        self._background = BackgroundConsolidator(
            store, self._consolidate_cycle, self.config.max_async_consolidations, on_consolidate_error
        )
        self.close_timeout_s = BACKGROUND_WAIT_S
        """How long ``close()`` (and leaving a ``with`` block) waits for background consolidation."""
        try:
            inner = resolve_embedder(self.config) if embedder is _DEFAULT else embedder
            if summariser is _DEFAULT:
                from graymatter.engine.summarisers import resolve_summariser

                summariser = resolve_summariser(self.config)
            self.summariser: Summariser | None = summariser
            self._embeddings: EmbeddingIndex = open_index(store, inner)
        except BaseException:
            self.store.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------------
    def close(self, timeout_s: float | None = None) -> None:
        """Wait (at most ``timeout_s``, default ``close_timeout_s``) for background consolidation, then
        release the store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._access.close()
        self._background.close(self.close_timeout_s if timeout_s is None else timeout_s)
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(self.close_timeout_s)

    @property
    def embedding_model(self) -> str | None:
        """``model/dimension`` of the active embedder, or ``None`` when keyword-only."""
        return self._embeddings.model_id

    @property
    def last_consolidation_error(self) -> str | None:
        """The latest background consolidation failure, else ``None``."""
        return self._background.last_error

    def reembed_pending(self, limit: int | None = REEMBED_BATCH) -> int:
        """Embed facts waiting for a vector (all when ``limit`` is None); return how many were stored.

        Stops quietly at the first provider failure; the rest stay queued.
        """
        return self._embeddings.reembed_pending(limit)

    def wait_for_background(self, timeout_s: float = BACKGROUND_WAIT_S) -> None:
        """Block until running background consolidations finish (tests, CLI shutdown)."""
        self._background.wait(timeout_s)

    def _consolidate_cycle(self, agent_id: str) -> ConsolidationReport:
        self._access.flush()
        return consolidate(self.store, agent_id, self.config, self.summariser)

    # -- validation helpers ------------------------------------------------------------------------
    def _agent(self, agent_id: Any) -> str:
        return check.agent_id(agent_id, self.config.max_agent_id_chars)

    def _text(self, text: Any, field: str = "text") -> str:
        return check.text(text, self.config.max_text_bytes, field)

    def _texts(self, texts: Sequence[Any]) -> list[str]:
        """Each text checked as :meth:`_text` checks it, in order (the first failure raises its error). An
        ASCII text within the limit that is not blank passes without the call: its size is its length and
        it holds no surrogate, so ``validation.text`` would return it."""
        limit, full = self.config.max_text_bytes, check.text
        return [
            t if type(t) is str and t.isascii() and len(t) <= limit and t.strip() else full(t, limit)
            for t in texts
        ]

    @staticmethod
    def _new_facts(
        agent_id: str, texts: list[str], confidence: Confidence, provenance: Provenance
    ) -> NewFacts:
        """New facts of checked texts, in text order: ids and creation moments increasing (a microsecond
        apart, as if written one by one, so that recency orders them as sequential writes), the others
        copies of the first that differ in id, text and moment only.

        Every field is checked or made here (``agent_id`` and ``texts`` by the caller's checks, the label
        by ``validation.confidence``, ``provenance`` a model), so the first is built as validating these
        fields would build it (``model_construct`` of the same fields: equal, same fields set, same field
        order; tested) without building the model's schema, a first bulk write's fixed 3 ms. The list carries
        the columns the facts were made of (``store.rows.NewFacts``), for a store to build rows from."""
        if not texts:
            return NewFacts()
        now = utcnow()
        first_id, ids = new_ulid_run(len(texts))
        first = Fact.model_construct(
            id=ids[0],
            agent_id=agent_id,
            text=texts[0],
            created_at=now,
            accessed_at=now,
            confidence=confidence,
            kind="fact",
            equivalents=[],
            provenance=provenance,
        )
        moments, moment = [], now
        for _ in range(1, len(texts)):
            moment += _ONE_US  # a microsecond apart, added (one timedelta per fact costs 8x more)
            moments.append(moment)
        facts = NewFacts([first, *_siblings()(first, ids[1:], texts[1:], moments)])
        facts.agent_id, facts.confidence, facts.provenance = agent_id, confidence, provenance
        facts.ids, facts.first_id, facts.texts, facts.created = ids, first_id, texts, now
        return facts


Siblings = Callable[[Fact, Sequence[str], Sequence[str], Sequence[datetime]], list[Fact]]
"""Copies of a first fact, one per (id, text, moment)."""


def _copy_fact(first: Fact, fact_id: str, text: str, moment: datetime) -> Fact:
    """``first`` with another id, text and moment, through the public API (``model_copy``)."""
    update = {"id": fact_id, "text": text, "created_at": moment, "accessed_at": moment, "equivalents": []}
    return first.model_copy(update=update)


def _copy_facts(
    first: Fact, ids: Sequence[str], texts: Sequence[str], moments: Sequence[datetime]
) -> list[Fact]:
    """``first`` with another id, text and moment for each, through the public API (``model_copy``)."""
    return [_copy_fact(first, i, t, m) for i, t, m in zip(ids, texts, moments, strict=True)]


def _copy_facts_fast(
    first: Fact, ids: Sequence[str], texts: Sequence[str], moments: Sequence[datetime]
) -> list[Fact]:
    """What :func:`_copy_facts` builds, without ``model_copy``'s generic handling (a third of the time):
    each copy's fields are ``first``'s with the id, text and moments replaced, in the same order (a copy of
    its ``__dict__``, five keys set: a fifth less than a new dict of them all), set through the instance's
    slot descriptors (what ``object.__setattr__`` finds, called directly: 0.2 us less each)."""
    new, base, fields = Fact.__new__, first.__dict__, first.__pydantic_fields_set__
    put_dict, put_fields, put_extra, put_private = _slot_setters()
    out: list[Fact] = []
    for fact_id, text, moment in zip(ids, texts, moments, strict=True):
        fact = new(Fact)
        values = base.copy()
        values["id"], values["text"], values["equivalents"] = fact_id, text, []
        values["created_at"] = values["accessed_at"] = moment
        put_dict(fact, values)
        put_fields(fact, set(fields))
        put_extra(fact, None)
        put_private(fact, None)
        out.append(fact)
    return out


Setter = Callable[[Any, Any], None]


def _slot_setters() -> tuple[Setter, Setter, Setter, Setter]:
    """The setters of a model's ``__dict__`` and of pydantic's three per-instance slots, from the class that
    declares them (``KeyError`` if a pydantic declares them otherwise: :func:`_siblings` then copies the
    public way)."""
    slots = vars(BaseModel)
    names = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    put_dict, put_fields, put_extra, put_private = (slots[name].__set__ for name in names)
    return put_dict, put_fields, put_extra, put_private


@functools.cache
def _siblings() -> Siblings:
    """The fast copies only if they are indistinguishable from ``model_copy`` with this pydantic (decided at
    the first bulk write; neither side validates, so no model schema is built)."""
    moment = utcnow()
    first = Fact.model_construct(
        id="a",
        agent_id="a",
        text="a",
        created_at=moment,
        accessed_at=moment,
        equivalents=[],
        provenance=Provenance.model_construct(),
    )
    later = [moment + timedelta(0, 0, 1)]
    try:
        fast = _copy_facts_fast(first, ["b"], ["b"], later)[0]
        slow = _copy_facts(first, ["b"], ["b"], later)[0]
        if (
            fast == slow
            and list(fast.__dict__) == list(slow.__dict__)
            and fast.model_fields_set == slow.model_fields_set
            and fast.equivalents is not first.equivalents
        ):
            return _copy_facts_fast
    except Exception:  # a future pydantic changed its internals: the public API it is
        pass
    return _copy_facts
