"""LoCoMo turn retrieval (development split): hit@10 and MRR, overall and per category.

Every turn of a conversation is stored as one fact ``"<speaker>: <text>"`` (one store and agent per
conversation, turns written in conversation order); each question of categories 1-4 with evidence is
recalled and scored against its evidence turns. Compared in the same run with an independent plain
SQLite FTS5 BM25 baseline (the reference figure's method). The data is read from the shared
bench-data folder at run time and never copied into the repository.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from benchmarks.bm25_baseline import BM25Index
from benchmarks.harness import cache_dir, print_table
from benchmarks.locomo_data import CATEGORY_NAMES, Conversation, Ranker, Scores, evaluate, load_conversations

K = 10
DEPTH = 50  # ranks scored for MRR (hit@10 uses the first 10)
REFERENCE = {"bm25_hit_at_10": 0.671, "bm25_mrr": 0.453, "best_fusion_hit_at_10": 0.680}
TARGET = {"hit_at_10": 0.72, "mrr": 0.50}
DEFAULT_LABEL = "graymatter default (keyword-only, offline)"
MERGED_AGENT = "all-conversations"


def _bm25_system(conv: Conversation) -> Ranker:
    index = BM25Index([t.fact_text for t in conv.turns])
    ids = [t.dia_id for t in conv.turns]
    return lambda query: [ids[i] for i in index.search(query, DEPTH)]


def _open_conversation(conv: Conversation) -> Any:
    """A keyword-only store holding the conversation's turns (built once per run, then reused)."""
    from graymatter import Memory
    from graymatter.config import MemoryConfig

    memory = _open.get(conv.sample_id)
    if memory is None:
        directory = cache_dir() / "locomo" / conv.sample_id
        memory = Memory(directory, config=MemoryConfig(async_consolidate=False), embedder=None)
        if not memory.list(conv.sample_id):
            memory.remember_many(conv.sample_id, [t.fact_text for t in conv.turns])
        _open[conv.sample_id] = memory
    return memory


def _vector_system(conv: Conversation) -> Ranker:
    """Default recall plus the deterministic ``HashingEmbedder`` (lexical unigram+bigram hashing, not a
    semantic model): shows what equal-weight vector fusion does with a weak embedder."""
    from graymatter import Memory
    from graymatter.config import MemoryConfig
    from graymatter.engine.embeddings import HashingEmbedder

    key = f"vectors:{conv.sample_id}"
    memory = _open.get(key)
    if memory is None:
        directory = cache_dir() / "locomo-vectors" / conv.sample_id
        memory = Memory(directory, config=MemoryConfig(async_consolidate=False), embedder=HashingEmbedder())
        if not memory.list(conv.sample_id):
            memory.remember_many(conv.sample_id, [t.fact_text for t in conv.turns])
        _open[key] = memory
    by_text = _turn_ids(conv)

    def rank(query: str) -> list[str]:
        ranked: list[str] = []
        for hit in memory.recall(conv.sample_id, query, top_k=DEPTH):
            ranked.extend(by_text[hit.text])
        return ranked

    return rank


def _turn_ids(conv: Conversation) -> dict[str, list[str]]:
    by_text: dict[str, list[str]] = {}
    for turn in conv.turns:
        by_text.setdefault(turn.fact_text, []).append(turn.dia_id)
    return by_text


def _default_system(conv: Conversation) -> Ranker:
    """``Memory.recall`` exactly as shipped (default config, keyword-only embedder)."""
    memory = _open_conversation(conv)
    by_text = _turn_ids(conv)

    def rank(query: str) -> list[str]:
        ranked: list[str] = []
        for hit in memory.recall(conv.sample_id, query, top_k=DEPTH):
            ranked.extend(by_text[hit.text])  # identical turn texts are deduplicated by recall
        return ranked

    return rank


def _variant_system(**changes: Any) -> Callable[[Conversation], Ranker]:
    """The same pipeline with one setting changed (an ablation), run through ``run_recall``."""
    from graymatter.retrieval.pipeline import RecallRequest, run_recall

    def build(conv: Conversation) -> Ranker:
        memory = _open_conversation(conv)
        by_text = _turn_ids(conv)
        defaults = RecallRequest(agent_ids=(conv.sample_id,), query="", top_k=DEPTH)

        def rank(query: str) -> list[str]:
            request = replace(defaults, query=query, **changes)
            ranked: list[str] = []
            for item in run_recall(memory.store, request).results:
                ranked.extend(by_text[item.candidate.fact.text])
            return ranked

        return rank

    return build


_open: dict[str, Any] = {}


def _close_all() -> None:
    while _open:
        _open.popitem()[1].close()


def merged_store_scores(conversations: list[Conversation], **changes: Any) -> Scores:
    """All conversations in ONE store and agent (a bigger, mixed memory): a question only scores
    turns of its own conversation. ``changes`` alter the default ``RecallRequest`` (ablations)."""
    from graymatter.retrieval.pipeline import RecallRequest, run_recall

    memory = _open.get("merged")
    if memory is None:
        from graymatter import Memory
        from graymatter.config import MemoryConfig

        directory = cache_dir() / "locomo-merged"
        memory = Memory(directory, config=MemoryConfig(async_consolidate=False), embedder=None)
        if not memory.list(MERGED_AGENT):
            for conv in conversations:
                memory.remember_many(MERGED_AGENT, [t.fact_text for t in conv.turns])
        _open["merged"] = memory
    owners: dict[str, list[tuple[str, str]]] = {}
    for conv in conversations:
        for turn in conv.turns:
            owners.setdefault(turn.fact_text, []).append((conv.sample_id, turn.dia_id))
    scores = Scores(k=K)
    for conv in conversations:
        for question in conv.questions:
            request = RecallRequest(agent_ids=(MERGED_AGENT,), query=question.text, top_k=DEPTH, **changes)
            ranked: list[str] = []
            for item in run_recall(memory.store, request).results:
                mine = [dia for sid, dia in owners[item.candidate.fact.text] if sid == conv.sample_id]
                ranked.extend(mine or ["<other conversation>"])
            scores.add(question.category, ranked, question.evidence)
    return scores


def _row(label: str, scores: Scores, seconds: float, queries: int) -> list[object]:
    overall = scores.overall()
    per = scores.by_category()
    row: list[object] = [label, overall["hit_at_k"], overall["mrr"]]
    for category in CATEGORY_NAMES:
        cat = per.get(category, {"hit_at_k": 0.0, "mrr": 0.0})
        row.append(f"{cat['hit_at_k']:.3f} / {cat['mrr']:.3f}")
    row.append(round(seconds / max(queries, 1) * 1000, 2))
    return row


def run(quick: bool) -> dict[str, Any]:
    """Evaluate the baseline and graymatter's default offline recall on the LoCoMo development split."""
    conversations = load_conversations()
    if quick:
        conversations = conversations[:1]
    from graymatter.models import SignalWeights

    systems: list[tuple[str, Callable[[Conversation], Ranker]]] = [
        ("FTS5 BM25 baseline (same run)", _bm25_system),
        (DEFAULT_LABEL, _default_system),
        ("  ablation: no conversation context", _variant_system(context_weight=0.0)),
        ("  ablation: no phrase bonus", _variant_system(phrase_weight=0.0)),
        ("  ablation: neither (plain BM25 ranks)", _variant_system(context_weight=0.0, phrase_weight=0.0)),
        ("  ablation: strict recency ranks", _variant_system(recency_resolution_s=0.0)),
        ("  ablation: recency weight 0", _variant_system(weights=SignalWeights(recency=0.0))),
        ("  with hashing vectors (lexical, weight 1.0)", _vector_system),
    ]
    queries = sum(len(c.questions) for c in conversations)
    results: dict[str, Any] = {"conversations": [c.sample_id for c in conversations], "questions": queries}
    rows = []
    try:
        for label, build in systems:
            start = time.perf_counter()
            scores = evaluate(conversations, build, K)
            elapsed = time.perf_counter() - start
            rows.append(_row(label, scores, elapsed, queries))
            results[label] = {
                "overall": scores.overall(),
                "by_category": {CATEGORY_NAMES[c]: v for c, v in scores.by_category().items()},
                "ms_per_question_incl_indexing": round(elapsed / max(queries, 1) * 1000, 3),
            }
        merged_rows = []
        merged: dict[str, Any] = {}
        for label, changes in (
            ("graymatter default (posting budget 2,000)", {}),
            ("  no posting budget", {"max_query_postings": None}),
            ("  posting budget 1,000", {"max_query_postings": 1000}),
            ("  posting budget 500", {"max_query_postings": 500}),
        ):
            start = time.perf_counter()
            scores = merged_store_scores(conversations, **changes)
            merged_rows.append(_row(label, scores, time.perf_counter() - start, queries))
            merged[label] = {"overall": scores.overall()}
        results["merged_store"] = merged
    finally:
        _close_all()
    counts = {
        CATEGORY_NAMES[c]: sum(q.category == c for conv in conversations for q in conv.questions)
        for c in CATEGORY_NAMES
    }
    headers = ["system", "hit@10", "MRR"]
    headers += [f"{CATEGORY_NAMES[c]} (n={counts[CATEGORY_NAMES[c]]}) hit/MRR" for c in CATEGORY_NAMES]
    headers.append("ms/question")
    table = print_table(
        f"LoCoMo turn retrieval, {len(conversations)} conversations, {queries} questions", headers, rows
    )
    default = results[DEFAULT_LABEL]["overall"]
    results["target"] = TARGET
    results["reference"] = REFERENCE
    results["target_met"] = bool(
        default["hit_at_k"] >= TARGET["hit_at_10"] and default["mrr"] >= TARGET["mrr"]
    )
    print(
        f"\ntarget hit@10 >= {TARGET['hit_at_10']} and MRR >= {TARGET['mrr']} (default config): "
        f"{'met' if results['target_met'] else 'NOT met'}"
        + (" (quick run: one conversation only)" if quick else "")
    )
    facts = sum(len(c.turns) for c in conversations)
    merged_table = print_table(
        f"Same questions, all {len(conversations)} conversations in one store ({facts:,} facts): "
        "posting-budget ablation",
        headers,
        merged_rows,
    )
    results["tables"] = [table, merged_table]
    return results
