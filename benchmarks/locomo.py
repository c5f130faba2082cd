"""LoCoMo retrieval (development split): the turn task and the observation task, hit@10 and MRR.

* **Turns**: every turn is one fact ``"<speaker>: <text>"``, written in conversation order with its LoCoMo
  session as the fact's ``session`` (one store and agent per conversation); a hit is an evidence turn.
* **Observations**: every session's ``observation`` statements are facts written without a session (plain
  facts, no context lending); a hit is an observation whose ``dia_id`` is in the question's evidence.

Facts are written when they were said: each is imported with its session's date as ``created_at`` (one
second apart, in order), as a store that lived through the conversation holds them. The ``undated``
ablation writes them all at once (the setup of earlier sessions).

Questions of categories 1-4 with evidence are recalled; results are reported overall, per category, and on
two disjoint splits of the five conversations: ``dev`` (conv-26, conv-30, conv-41, where the weights of
ADR 0002 were chosen) and ``held-out`` (conv-42, conv-43). Compared in the same run with an independent
plain SQLite FTS5 BM25 baseline. The data is read from the shared bench-data folder and never copied.
When the ``embed`` extra and its model are installed, both tasks are also measured with the local MiniLM
vectors (stores built once, then cached) and held against the default and the embed targets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from benchmarks.bm25_baseline import BM25Index
from benchmarks.harness import cache_dir, print_table
from benchmarks.locomo_data import (
    CATEGORY_NAMES,
    Conversation,
    Ranker,
    Scores,
    evaluate,
    load_conversations,
    write_dated,
    write_plain,
)
from benchmarks.locomo_misses import HEADERS as MISS_HEADERS
from benchmarks.locomo_misses import measure as measure_misses

K = 10
DEPTH = 50  # ranks scored for MRR (hit@10 uses the first 10)
REFERENCE = {"bm25_hit_at_10": 0.671, "bm25_mrr": 0.453, "best_fusion_hit_at_10": 0.680}
TARGET = {"hit_at_10": 0.76, "mrr": 0.50}
OBSERVATION_TARGET = {"hit_at_10": 0.72, "mrr": 0.54}
DEFAULT_LABEL = "graymatter default (keyword-only, offline)"
EMBED_LABEL = "graymatter with the embed extra (local MiniLM + cross-encoder)"
EMBED_TARGET = {"hit_at_10": 0.78, "mrr": 0.56}
BASELINE_LABEL = "FTS5 BM25 baseline (same run)"
SPLITS = {"dev": ("conv-26", "conv-30", "conv-41"), "held-out": ("conv-42", "conv-43")}
CACHE_VERSION = "v3"  # facts written at their session dates (ADR 0011, session 4); older caches unused

Build = Callable[[Conversation], Ranker]
Unit = tuple[str, frozenset[str]]  # (fact text, the dia_ids a hit on it counts for)


def _turn_units(conv: Conversation) -> list[Unit]:
    return [(t.fact_text, frozenset({t.dia_id})) for t in conv.turns]


def _observation_units(conv: Conversation) -> list[Unit]:
    return [(o.text, o.dia_ids) for o in conv.observations]


_open: dict[str, Any] = {}


def _memory(
    task: str, conv: Conversation, sessions: str = "locomo", embedder: Any = None, dated: bool = True
) -> Any:
    """A store holding one task's facts of ``conv`` (built once per cache version, then reused)."""
    from graymatter import Memory
    from graymatter.config import MemoryConfig

    key = f"{task}-{sessions}-{type(embedder).__name__}" + ("" if dated else "-undated")
    memory = _open.get(f"{key}:{conv.sample_id}")
    if memory is None:
        directory = cache_dir() / f"locomo-{CACHE_VERSION}" / key / conv.sample_id
        config = MemoryConfig(async_consolidate=False)
        memory = Memory(directory, config=config, embedder=embedder, summariser=None)
        if not memory.list(conv.sample_id):
            (write_dated if dated else write_plain)(memory, task, conv, sessions)
        _open[f"{key}:{conv.sample_id}"] = memory
    return memory


def _owners(units: Sequence[Unit]) -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for text, ids in units:
        owners.setdefault(text, []).extend(sorted(ids))
    return owners


def _bm25(task: str) -> Build:
    def build(conv: Conversation) -> Ranker:
        units = _turn_units(conv) if task == "turns" else _observation_units(conv)
        index = BM25Index([text for text, _ in units])
        return lambda query: [i for n in index.search(query, DEPTH) for i in sorted(units[n][1])]

    return build


def _graymatter(
    task: str,
    sessions: str = "locomo",
    embedder: Callable[[], Any] | None = None,
    dated: bool = True,
    **changes: Any,
) -> Build:
    """Recall as shipped (``Memory.recall``), or the same pipeline with ``changes`` (an ablation)."""
    from graymatter.retrieval.pipeline import RecallRequest, run_recall

    def build(conv: Conversation) -> Ranker:
        vectors = embedder() if embedder else None
        memory = _memory(task, conv, sessions, vectors, dated)
        if vectors is not None:  # the store keys vectors by ``model/dimension``: query under that key
            vectors = _Keyed(vectors, memory.embedding_model)
        owners = _owners(_turn_units(conv) if task == "turns" else _observation_units(conv))
        defaults = RecallRequest(agent_ids=(conv.sample_id,), query="", top_k=DEPTH)

        def rank(query: str) -> list[str]:
            if changes:
                texts = [
                    r.candidate.fact.text
                    for r in run_recall(
                        memory.store, replace(defaults, query=query, **changes), vectors
                    ).results
                ]
            else:
                texts = [hit.text for hit in memory.recall(conv.sample_id, query, top_k=DEPTH)]
            return [dia for text in texts for dia in owners[text]]  # identical texts are collapsed by recall

        return rank

    return build


class _Keyed:
    """An embedder under the key its store files vectors by (what ``Memory`` passes to recall)."""

    def __init__(self, inner: Any, model_id: str) -> None:
        self.inner, self.model_id = inner, model_id

    @property
    def reranker(self) -> Any:
        """The inner embedder's cross-encoder (recall re-reads its head with it), if any."""
        return getattr(self.inner, "reranker", None)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The inner embedder's vectors."""
        return list(self.inner.embed(texts))


def _hashing() -> Any:
    from graymatter.engine.embeddings import HashingEmbedder

    return HashingEmbedder()


_ONNX: list[Any] = []


def _onnx() -> Any:
    """The local MiniLM embedder of the ``embed`` extra, with its cross-encoder (loaded once per run)."""
    if not _ONNX:
        from graymatter.config import MemoryConfig
        from graymatter.engine.embeddings import OnnxEmbedder, local_reranker, onnx_model_files

        config = MemoryConfig.from_env()
        files = onnx_model_files(config)
        assert files is not None
        _ONNX.append(OnnxEmbedder(*files, reranker=local_reranker(config)))
    return _ONNX[0]


def embed_installed() -> bool:
    """Whether the ``embed`` extra and its model are installed (its rows are measured only then)."""
    from graymatter.config import MemoryConfig
    from graymatter.engine.embeddings import onnx_model_files

    return onnx_model_files(MemoryConfig()) is not None


def _systems(task: str) -> list[tuple[str, Build]]:
    from graymatter.models import SignalWeights

    rows: list[tuple[str, Build]] = [(BASELINE_LABEL, _bm25(task)), (DEFAULT_LABEL, _graymatter(task))]
    if task == "turns":
        rows += [
            ("  ablation: one session per conversation (lending across sittings)", _graymatter(task, "one")),
            ("  ablation: no conversation context", _graymatter(task, context_weight=0.0)),
        ]
    rows += [
        (
            "  ablation: facts written all at once (undated, the session-3 setup)",
            _graymatter(task, dated=False),
        ),
        ("  ablation: no subject re-scoring", _graymatter(task, subject_weight=0.0)),
        ("  ablation: no synonym bridge", _graymatter(task, synonym_weight=0.0)),
        ("  ablation: no date re-scoring", _graymatter(task, date_weight=0.0)),
        ("  ablation: no coverage re-scoring", _graymatter(task, coverage_weight=0.0)),
        ("  ablation: no temporal intent", _graymatter(task, temporal_weight=0.0)),
        ("  ablation: no phrase bonus", _graymatter(task, phrase_weight=0.0)),
        ("  ablation: strict recency ranks", _graymatter(task, recency_resolution_s=0.0)),
        ("  ablation: recency weight 0", _graymatter(task, weights=SignalWeights(recency=0.0))),
        ("  with hashing vectors (lexical, trust-weighted)", _graymatter(task, embedder=_hashing)),
    ]
    if embed_installed():
        rows += [
            (EMBED_LABEL, _graymatter(task, embedder=_onnx)),
            (
                "  embed ablation: no cross-encoder re-ranking (session 5)",
                _graymatter(task, embedder=_onnx, rerank_depth=0),
            ),
            (
                "  embed ablation: no vector neighbours joining the re-read head (session 6)",
                _graymatter(task, embedder=_onnx, rerank_neighbours=0),
            ),
            (
                "  embed ablation: no subject re-scoring",
                _graymatter(task, embedder=_onnx, subject_weight=0.0),
            ),
            (
                "  embed ablation: no semantic re-scoring (session-3 trusted vote only)",
                _graymatter(task, embedder=_onnx, semantic_weight=0.0),
            ),
            (
                "  embed ablation: vector at full weight (no trust)",
                _graymatter(task, embedder=_onnx, trust_vectors=False),
            ),
        ]
    return rows


def _summary(scores: Scores) -> dict[str, Any]:
    return {
        "overall": scores.overall(),
        "by_category": {CATEGORY_NAMES[c]: v for c, v in scores.by_category().items()},
    }


def _row(label: str, scores: Scores, splits: dict[str, Scores], seconds: float, queries: int) -> list[object]:
    overall = scores.overall()
    row: list[object] = [label, overall["hit_at_k"], overall["mrr"]]
    for category in CATEGORY_NAMES:
        cat = scores.by_category().get(category, {"hit_at_k": 0.0, "mrr": 0.0})
        row.append(f"{cat['hit_at_k']:.3f} / {cat['mrr']:.3f}")
    for split in SPLITS:
        part = splits[split].overall()
        row.append(f"{part['hit_at_k']:.3f} / {part['mrr']:.3f}")
    row.append(round(seconds / max(queries, 1) * 1000, 2))
    return row


def _task(task: str, conversations: list[Conversation]) -> tuple[dict[str, Any], list[list[object]]]:
    queries = sum(len(c.questions) for c in conversations)
    results: dict[str, Any] = {}
    rows = []
    for label, build in _systems(task):
        start = time.perf_counter()
        per_conversation = {c.sample_id: evaluate([c], build, K) for c in conversations}
        elapsed = time.perf_counter() - start
        scores = _merged(per_conversation.values())
        splits = {
            name: _merged([v for cid, v in per_conversation.items() if cid in ids])
            for name, ids in SPLITS.items()
        }
        rows.append(_row(label, scores, splits, elapsed, queries))
        results[label] = {
            **_summary(scores),
            "splits": {name: s.overall() for name, s in splits.items()},
            "ms_per_question_incl_indexing": round(elapsed / max(queries, 1) * 1000, 3),
        }
    return results, rows


def _merged(parts: Sequence[Scores] | Any) -> Scores:
    merged = Scores(k=K)
    for part in parts:
        for category, rows in part.per_category.items():
            merged.per_category.setdefault(category, []).extend(rows)
    return merged


def _met(result: dict[str, Any], target: dict[str, float], split: str) -> bool:
    part = result["splits"][split] if split in result.get("splits", {}) else result["overall"]
    return bool(part["hit_at_k"] >= target["hit_at_10"] and part["mrr"] >= target["mrr"])


def run(quick: bool) -> dict[str, Any]:
    """Both tasks, the baseline and graymatter's default offline recall with its ablations."""
    conversations = load_conversations()
    if quick:
        conversations = [c for c in conversations if c.sample_id in ("conv-26", "conv-42")]
    queries = sum(len(c.questions) for c in conversations)
    counts = {
        c: sum(q.category == c for conv in conversations for q in conv.questions) for c in CATEGORY_NAMES
    }
    headers = [
        "system",
        "hit@10",
        "MRR",
        *(f"{CATEGORY_NAMES[c]} (n={counts[c]}) hit/MRR" for c in CATEGORY_NAMES),
    ]
    headers += [f"{name} hit/MRR" for name in SPLITS] + ["ms/question"]
    out: dict[str, Any] = {"conversations": [c.sample_id for c in conversations], "questions": queries}
    tables = []
    try:
        turns, turn_rows = _task("turns", conversations)
        observations, observation_rows = _task("observations", conversations)
        misses, miss_rows = _misses(conversations)
    finally:
        while _open:
            _open.popitem()[1].close()
    out.update(turns)  # the turn task's rows stay at the top level (the README section reads them)
    out["observations"] = observations
    tables.append(
        print_table(
            f"LoCoMo turn retrieval, {len(conversations)} conversations, {queries} questions",
            headers,
            turn_rows,
        )
    )
    facts = sum(len(c.observations) for c in conversations)
    tables.append(
        print_table(
            f"LoCoMo observation retrieval ({facts:,} observation facts), same questions",
            headers,
            observation_rows,
        )
    )
    out["observation_misses"] = misses
    tables.append(print_table("LoCoMo observation task: why questions are missed", MISS_HEADERS, miss_rows))
    out["target"] = {"turns": TARGET, "observations": OBSERVATION_TARGET, "judged_on": "held-out"}
    out["reference"] = REFERENCE
    out["target_met"] = _met(turns[DEFAULT_LABEL], TARGET, "held-out")
    out["observation_target_met"] = _met(observations[DEFAULT_LABEL], OBSERVATION_TARGET, "held-out")
    for name, result, target in (
        ("turns", turns, TARGET),
        ("observations", observations, OBSERVATION_TARGET),
    ):
        held = result[DEFAULT_LABEL]["splits"]["held-out"]
        verdict = "met" if _met(result[DEFAULT_LABEL], target, "held-out") else "NOT met"
        print(
            f"{name}: held-out hit@10 {held['hit_at_k']:.3f} / MRR {held['mrr']:.3f} against target "
            f"{target['hit_at_10']} / {target['mrr']}: {verdict}"
            + (" (quick run: two conversations)" if quick else "")
        )
    if EMBED_LABEL in observations:
        out["embed"] = _embed_verdict(turns, observations)
    else:
        print("embed extra not installed: its rows were not measured (pip install 'graymatter[embed]')")
    out["tables"] = tables
    return out


def _misses(conversations: list[Conversation]) -> tuple[dict[str, Any], list[list[object]]]:
    """The observation outcomes of the default (and embed) system per split (:mod:`.locomo_misses`)."""
    systems = [(DEFAULT_LABEL, _graymatter("observations"))]
    if embed_installed():
        systems.append((EMBED_LABEL, _graymatter("observations", embedder=_onnx)))
    return measure_misses(systems, conversations, SPLITS)


def _embed_verdict(turns: dict[str, Any], observations: dict[str, Any]) -> dict[str, Any]:
    """Held-out verdicts for the embed extra: never worse than the default, observations >= target."""
    verdict: dict[str, Any] = {"target": EMBED_TARGET}
    for name, result in (("turns", turns), ("observations", observations)):
        held, base = (result[label]["splits"]["held-out"] for label in (EMBED_LABEL, DEFAULT_LABEL))
        not_worse = held["hit_at_k"] >= base["hit_at_k"] and held["mrr"] >= base["mrr"]
        verdict[f"{name}_not_worse"] = not_worse
        print(
            f"{name} with embed: held-out {held['hit_at_k']:.3f} / {held['mrr']:.3f} against the default "
            f"{base['hit_at_k']:.3f} / {base['mrr']:.3f}: {'not worse' if not_worse else 'WORSE'}"
        )
    verdict["observation_target_met"] = _met(observations[EMBED_LABEL], EMBED_TARGET, "held-out")
    met = "met" if verdict["observation_target_met"] else "NOT met"
    print(f"observations with embed against {EMBED_TARGET['hit_at_10']} / {EMBED_TARGET['mrr']}: {met}")
    return verdict
