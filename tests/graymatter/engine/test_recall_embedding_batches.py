"""Batched embedding sorts by length and keeps order; ``auto`` names the missing pieces of the embed extra."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embedding_index import EMBED_CHUNK, by_length_chunks
from graymatter.engine.embeddings import HashingEmbedder, onnx_missing, resolve_embedder


class _Recording(HashingEmbedder):
    """The real hashing embedder, remembering the texts of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_chunks_are_sorted_by_length_and_cover_every_text() -> None:
    texts = ["x" * n for n in (5, 1, 9, 3, 3, 7)]
    assert by_length_chunks(texts, 4) == [[1, 3, 4, 0], [5, 2]]
    assert by_length_chunks([], 4) == []


def test_a_batched_write_embeds_by_length_and_stores_each_vector_with_its_fact(
    make_memory: Callable[..., Memory],
) -> None:
    embedder = _Recording()
    memory = make_memory(embedder=embedder)
    embedder.calls.clear()  # opening probes the dimension with one text
    texts = [f"fact {i} " + "word " * ((i * 7) % 23) for i in range(EMBED_CHUNK + 9)]
    facts = memory.remember_many("a", texts)
    assert [len(call) for call in embedder.calls] == [EMBED_CHUNK, 9]
    lengths = [len(t) for call in embedder.calls for t in call]
    assert lengths == sorted(lengths)
    reference = HashingEmbedder()
    for fact in facts:  # each fact's stored vector is its own text's: the nearest neighbour of itself
        hit = memory.store.vector_search(
            ["a"], reference.embed([fact.text])[0], memory.embedding_model or "", 1
        )
        assert [h.fact_id for h in hit] == [fact.id]


def test_auto_names_the_missing_pieces_of_a_partial_embed_setup(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"not really a model")
    config = MemoryConfig(
        embedding="auto",
        ollama_url="http://127.0.0.1:9",
        onnx_model_path=str(model),
        onnx_tokenizer_path=str(tmp_path / "absent-tokenizer.json"),
    )
    assert "tokenizer.json" in onnx_missing(config)
    assert "model" not in onnx_missing(config)
    with caplog.at_level(logging.WARNING, logger="graymatter"):
        assert resolve_embedder(config) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "graymatter[embed] extra is incomplete" in warnings[0] and "tokenizer.json" in warnings[0]
