"""Synthetic retrieval-quality suite (seeded, generated in the repo; CI checks it in tests/benchmarks).

A project memory of ~100 simulated days: distractor notes every session, facts planted in the first
sessions with a question each, and revision families whose values change over time and are
corrected with ``revise``. Measured with the default offline recall (keyword-only, top-8):

* hit@1 / hit@3 / hit@8 and MRR of the planted fact, per question class (``lexical`` questions share
  a rare word with their fact; ``paraphrase`` questions share none or only common words);
* revision currency: the current value is in the top 8 and outranks every retired version;
* retired (superseded) facts returned: must be zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.harness import cache_dir, print_table
from benchmarks.planted import PlantedCorpus, generate
from benchmarks.planted_store import AGENT, build_store, open_memory

TOP_K = 8
FULL = {"seed": 42, "sessions": 100, "planted_per_template": 3, "families_per_template": 4}
QUICK = {"seed": 42, "sessions": 40, "planted_per_template": 1, "families_per_template": 2}


@dataclass
class QualityReport:
    """Per-class rank lists and revision outcomes of one evaluation."""

    ranks: dict[str, list[int]] = field(default_factory=dict)  # class -> 1-based rank of gold (0 = absent)
    families_current: int = 0
    families_total: int = 0
    retired_returned: int = 0
    deterministic: bool = True

    def hit_at(self, k: int, query_class: str | None = None) -> float:
        ranks = self.ranks_of(query_class)
        return sum(1 for r in ranks if 0 < r <= k) / len(ranks) if ranks else 0.0

    def mrr(self, query_class: str | None = None) -> float:
        ranks = self.ranks_of(query_class)
        return sum(1.0 / r for r in ranks if r) / len(ranks) if ranks else 0.0

    def ranks_of(self, query_class: str | None) -> list[int]:
        """Gold ranks of one question class (all classes when ``None``)."""
        if query_class is None:
            return [r for ranks in self.ranks.values() for r in ranks]
        return self.ranks.get(query_class, [])


def evaluate(memory: Any, corpus: PlantedCorpus, top_k: int = TOP_K) -> QualityReport:
    """Ask every planted and revision question once (and a second time to check determinism)."""
    report = QualityReport()
    retired = corpus.retired_texts
    for planted in corpus.planted:
        hits = [h.text for h in memory.recall(AGENT, planted.question, top_k=top_k)]
        again = [h.text for h in memory.recall(AGENT, planted.question, top_k=top_k)]
        report.deterministic &= hits == again
        rank = hits.index(planted.text) + 1 if planted.text in hits else 0
        report.ranks.setdefault(planted.query_class, []).append(rank)
        report.retired_returned += sum(1 for t in hits if t in retired)
    for family in corpus.families:
        hits = [h.text for h in memory.recall(AGENT, family.question, top_k=top_k)]
        current = family.versions[-1]
        report.families_total += 1
        if current in hits:
            position = hits.index(current)
            report.families_current += not any(t in family.versions[:-1] for t in hits[:position])
        report.retired_returned += sum(1 for t in hits if t in retired)
    return report


def build_and_evaluate(directory: Path, corpus: PlantedCorpus, *, revised: bool = True) -> QualityReport:
    """Build the store for ``corpus`` in ``directory`` and evaluate default recall on it."""
    build_store(directory, corpus, revised=revised)
    memory = open_memory(directory)
    try:
        return evaluate(memory, corpus)
    finally:
        memory.close()


def run(quick: bool) -> dict[str, Any]:
    """Evaluate the revised store (the product path) and a flat store (no revise) as the control."""
    params = QUICK if quick else FULL
    corpus = generate(**params)
    reports = {
        "revised": build_and_evaluate(cache_dir() / "synthetic-revised", corpus, revised=True),
        "flat (never revised)": build_and_evaluate(cache_dir() / "synthetic-flat", corpus, revised=False),
    }
    rows = []
    classes = sorted({p.query_class for p in corpus.planted})
    for label, rep in reports.items():
        for query_class in [*classes, None]:
            rows.append(
                [
                    label,
                    query_class or "all planted",
                    len(rep.ranks_of(query_class)),
                    rep.hit_at(1, query_class),
                    rep.hit_at(3, query_class),
                    rep.hit_at(8, query_class),
                    rep.mrr(query_class),
                ]
            )
    planted_table = print_table(
        f"Synthetic suite: planted facts ({len(corpus.timeline)} facts, {params['sessions']} sessions, "
        "top-8)",
        ["store", "question class", "n", "hit@1", "hit@3", "hit@8", "MRR"],
        rows,
    )
    revision_table = print_table(
        "Synthetic suite: revision families",
        [
            "store",
            "families",
            "current value on top of retired ones",
            "retired facts returned",
            "deterministic",
        ],
        [
            [label, rep.families_total, rep.families_current, rep.retired_returned, rep.deterministic]
            for label, rep in reports.items()
        ],
    )
    return {
        "params": params,
        "facts": len(corpus.timeline),
        "reports": {
            label: {
                "hit_at_1": round(rep.hit_at(1), 4),
                "hit_at_3": round(rep.hit_at(3), 4),
                "hit_at_8": round(rep.hit_at(8), 4),
                "mrr": round(rep.mrr(), 4),
                "by_class": {
                    c: {"n": len(rep.ranks_of(c)), "hit_at_8": round(rep.hit_at(8, c), 4)} for c in classes
                },
                "families_current": rep.families_current,
                "families_total": rep.families_total,
                "retired_returned": rep.retired_returned,
                "deterministic": rep.deterministic,
            }
            for label, rep in reports.items()
        },
        "tables": [planted_table, revision_table],
    }
