"""Token reduction next to retrieval hit rate, measured the way the Go original measures them.

Part 1 (its ``token_count``): 100 sales notes of 50-70 words, one per session (one simulated day
each); the fixed query "follow up with prospects and close pending deals this week"; top 8. Tokens
of full-history injection vs a last-8 window vs graymatter's top-8 recall after 1, 10, 30 and 100
sessions. This part never checks relevance (8 random notes would cost the same), so part 2 does.

Part 2 (its ``retrieval_quality`` and ``revision_currency``): the planted corpus (distractors every
session, facts planted in the first sessions, revision families corrected with ``revise``); each
question is asked after the last session. Reported per system: hit rate of the gold fact in the
injected context (Wilson 95 % interval), stale answers (a revision question whose context shows a
retired value), tokens and facts per question, recall latency. Tokens are estimated as words x 1.33.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.harness import cache_dir, estimate_tokens, percentile, print_table, wilson_interval
from benchmarks.planted import PlantedCorpus, generate
from benchmarks.planted_store import AGENT, build_store, open_memory
from benchmarks.sales_notes import FIXED_QUERY, generate_notes

TOP_K = 8
CHECKPOINTS = (1, 10, 30, 100)
PLANTED_FULL = {"seed": 42, "sessions": 100, "planted_per_template": 3, "families_per_template": 4}
PLANTED_QUICK = {"seed": 42, "sessions": 30, "planted_per_template": 1, "families_per_template": 1}


def _tokens(texts: Sequence[str]) -> int:
    return sum(estimate_tokens(t) for t in texts)


def token_count(quick: bool) -> dict[str, Any]:
    """Part 1: tokens injected after N sessions of sales notes."""
    notes = generate_notes(100, seed=42)
    checkpoints = (1, 10, 30) if quick else CHECKPOINTS
    rows = []
    records = []
    for sessions in checkpoints:
        corpus = PlantedCorpus(
            sessions=sessions, timeline=[(i + 1, n) for i, n in enumerate(notes[:sessions])]
        )
        directory = cache_dir() / f"tokens-{sessions}"
        build_store(directory, corpus, revised=True)
        memory = open_memory(directory)
        try:
            recalled = [h.text for h in memory.recall(AGENT, FIXED_QUERY, top_k=TOP_K)]
        finally:
            memory.close()
        history = notes[:sessions]
        full, window, recall = _tokens(history), _tokens(history[-TOP_K:]), _tokens(recalled)
        reduction = 100.0 * (1 - recall / full) if full else 0.0
        rows.append([sessions, full, window, recall, f"{reduction:.0f} %"])
        records.append(
            {"sessions": sessions, "full": full, "window_8": window, "graymatter_top8": recall,
             "reduction_vs_full_pct": round(reduction, 1)}
        )  # fmt: skip
    table = print_table(
        "Tokens injected per prompt (sales notes, fixed query, top-8)",
        ["sessions", "full history", "window-8", "graymatter top-8", "reduction vs full"],
        rows,
    )
    return {"rows": records, "table": table}


System = Callable[[Any, str], list[str]]


def retrieval_quality(quick: bool) -> dict[str, Any]:
    """Part 2: hit rate, stale answers and tokens per system on the planted corpus."""
    corpus = generate(**(PLANTED_QUICK if quick else PLANTED_FULL))
    revised_dir, flat_dir = cache_dir() / "tokens-planted-revised", cache_dir() / "tokens-planted-flat"
    build_store(revised_dir, corpus, revised=True)
    build_store(flat_dir, corpus, revised=False)
    history = [text for _, text in corpus.timeline]
    questions: list[tuple[str, str, tuple[str, ...]]] = [(p.question, p.text, ()) for p in corpus.planted]
    questions += [(f.question, f.versions[-1], f.versions[:-1]) for f in corpus.families]

    from graymatter.models import SignalWeights

    recency_only = SignalWeights(keyword=0.0, vector=0.0, recency=1.0)
    systems: list[tuple[str, str | None, dict[str, Any]]] = [
        ("full history", None, {}),
        ("window-8", None, {}),
        ("graymatter top-8", "revised", {}),
        ("graymatter top-8, min_relevance 0.5", "revised", {"min_relevance": 0.5}),
        ("graymatter recency-only {0,0,1}", "revised", {"weights": recency_only}),
        ("graymatter top-8, never revised", "flat", {}),
    ]
    stores = {"revised": open_memory(revised_dir), "flat": open_memory(flat_dir)}
    rows = []
    records: dict[str, Any] = {}
    window_equivalent = 0
    try:
        live_newest = [f.text for f in stores["revised"].list(AGENT) if f.live][-TOP_K:]
        for label, store_name, options in systems:
            hits = stale = tokens = facts = 0
            latencies: list[float] = []
            for question, gold, retired in questions:
                if store_name is None:
                    context = history if label == "full history" else history[-TOP_K:]
                else:
                    start = time.perf_counter()
                    found = stores[store_name].recall(AGENT, question, top_k=TOP_K, **options)
                    latencies.append(time.perf_counter() - start)
                    context = [h.text for h in found]
                    if options.get("weights") is recency_only:
                        window_equivalent += set(context) == set(live_newest)
                hits += gold in context
                stale += any(r in context for r in retired)
                tokens += _tokens(context)
                facts += len(context)
            n = len(questions)
            low, high = wilson_interval(hits, n)
            p50 = percentile(latencies, 50) * 1000 if latencies else 0.0
            p95 = percentile(latencies, 95) * 1000 if latencies else 0.0
            revisions = len(corpus.families)
            rows.append(
                [label, f"{100 * hits / n:.0f} % [{100 * low:.0f}-{100 * high:.0f}]",
                 f"{stale}/{revisions}", round(tokens / n), round(facts / n, 1),
                 f"{p50:.2f}" if latencies else "-", f"{p95:.2f}" if latencies else "-"]
            )  # fmt: skip
            records[label] = {
                "hit_rate": round(hits / n, 4),
                "wilson_95": [round(low, 4), round(high, 4)],
                "stale_revision_answers": stale,
                "revision_questions": revisions,
                "tokens_per_question": round(tokens / n, 1),
                "facts_per_question": round(facts / n, 2),
                "p50_ms": round(p50, 3),
                "p95_ms": round(p95, 3),
            }
    finally:
        for memory in stores.values():
            memory.close()
    table = print_table(
        f"Hit rate next to tokens ({len(history)} facts over {corpus.sessions} sessions, {len(questions)} "
        "questions asked after the last session)",
        ["system", "hit rate [95 % CI]", "stale answers", "tokens/q", "facts/q", "p50 ms", "p95 ms"],
        rows,
    )
    print(
        f"\nrecency-only {{0,0,1}} returned exactly the newest-8 live facts for "
        f"{window_equivalent}/{len(questions)} questions (the sliding-window cross-check)"
    )
    return {
        "questions": len(questions),
        "facts": len(history),
        "systems": records,
        "recency_only_equals_window": f"{window_equivalent}/{len(questions)}",
        "table": table,
    }


def run(quick: bool) -> dict[str, Any]:
    """Both parts; tables printed, results returned for the JSON file."""
    part1 = token_count(quick)
    part2 = retrieval_quality(quick)
    return {"token_count": part1, "retrieval_quality": part2, "tables": [part1["table"], part2["table"]]}
