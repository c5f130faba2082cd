"""The store's active embedder: vectors for new facts, and catching up on facts waiting for one."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from graymatter.engine.embeddings import Embedder
from graymatter.errors import EmbeddingError
from graymatter.store.base import Store

log = logging.getLogger("graymatter")

REEMBED_BATCH = 64
"""Facts embedded per provider call when catching up."""
EMBED_CHUNK = 32
"""Texts per provider call in a batched write; texts are sorted by length first so a call pads little."""


def by_length_chunks(texts: Sequence[str], size: int = EMBED_CHUNK) -> list[list[int]]:
    """Indexes of ``texts`` sorted by length (stable), cut into chunks of ``size``: each provider call gets
    texts of similar length, so a padded batch is never slower per text than single writes."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[start : start + size] for start in range(0, len(order), size)]


class KeyedEmbedder:
    """An embedder whose ``model_id`` also pins the vector dimension (``model/dim``)."""

    def __init__(self, inner: Embedder, key: str) -> None:
        self.inner = inner
        self.model_id = key

    @property
    def reranker(self) -> object | None:
        """The wrapped embedder's cross-encoder (the ``embed`` extra's local models), if it has one."""
        return getattr(self.inner, "reranker", None)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` from the wrapped embedder."""
        return self.inner.embed(texts)


class EmbeddingIndex:
    """Embeds facts for one store with one keyed embedder (or none: keyword-only)."""

    def __init__(self, store: Store, embedder: KeyedEmbedder | None = None) -> None:
        self.store = store
        self.embedder = embedder

    @property
    def model_id(self) -> str | None:
        """``model/dimension`` of the active embedder, or ``None`` when keyword-only."""
        return self.embedder.model_id if self.embedder else None

    def embed_one(self, text: str) -> list[float] | None:
        """The vector of ``text``, or ``None`` (keyword-only, or the embedder failed: re-embedded later)."""
        if self.embedder is None:
            return None
        try:
            return self.embedder.embed([text])[0]
        except Exception as exc:  # never fail a write because of the embedder
            log.warning(
                "embedding failed (%s); the fact is stored and queued for re-embedding", type(exc).__name__
            )
            return None

    def embed_batch(self, texts: Sequence[str]) -> list[list[float] | None]:
        """One vector per text, or ``None`` for every text when keyword-only or the embedder failed."""
        vectors: list[list[float] | None] = [None] * len(texts)
        if self.embedder is not None and texts:
            try:
                for chunk in by_length_chunks(texts):
                    embedded = self.embedder.embed([texts[i] for i in chunk])
                    for index, vector in zip(chunk, embedded, strict=True):
                        vectors[index] = vector
            except Exception as exc:
                log.warning("batch embedding failed (%s); facts queued for re-embedding", type(exc).__name__)
                vectors = [None] * len(texts)
        return vectors

    def reembed_pending(self, limit: int | None = REEMBED_BATCH) -> int:
        """Embed facts waiting for a vector (all when ``limit`` is None); return how many were stored.

        Stops quietly at the first provider failure; the rest stay queued.
        """
        if self.embedder is None:
            return 0
        done = 0
        while limit is None or done < limit:
            size = REEMBED_BATCH if limit is None else min(REEMBED_BATCH, limit - done)
            batch = self.store.pending_embeddings(size)
            if not batch:
                break
            try:
                vectors = self.embedder.embed([f.text for f in batch])
            except Exception as exc:
                log.warning("re-embedding paused: %s", type(exc).__name__)
                break
            stored = self.store.set_vectors(
                zip([f.id for f in batch], vectors, strict=True), self.embedder.model_id
            )
            done += len(batch)
            if stored == 0:
                break
        return done


def open_index(store: Store, inner: Embedder | None) -> EmbeddingIndex:
    """Probe ``inner`` for its dimension, reset the store's vectors if the model changed, and catch up.

    An unreachable embedder keeps the stored model when it is the same one (vectors are added later);
    otherwise the index is keyword-only.
    """
    if inner is None:
        return EmbeddingIndex(store)
    stored = store.embedding_model()
    try:
        probe = inner.embed(["graymatter dimension probe"])[0]
        key: str | None = f"{inner.model_id}/{len(probe)}"
    except EmbeddingError as exc:
        log.warning("embedder %s unavailable (%s); new facts will be embedded later", inner.model_id, exc)
        key = stored if stored and stored.startswith(f"{inner.model_id}/") else None
    if key is None:
        return EmbeddingIndex(store)
    index = EmbeddingIndex(store, KeyedEmbedder(inner, key))
    if stored != key:
        store.reset_embeddings(key)
        index.reembed_pending(limit=None)
    else:
        index.reembed_pending(limit=REEMBED_BATCH * 4)
    return index
