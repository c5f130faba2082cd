"""Why the observation task misses: each question's outcome, and the lexical ceiling it implies.

A question is a **hit** (an evidence observation in the top 10), has **no observation** among its evidence
(no system can hit it), or is a **miss**, split by whether any of its evidence observations shares an
informative word with the question once the speakers' names are left out (index stems, the query's own
stop-words). A miss that shares no word can only be found by meaning (a synonym, a paraphrase, an
inference); a miss that shares one is a ranking problem. ``hits + misses that share a word`` over all
questions is the best hit@10 a ranking of lexical matches could reach: the **lexical ceiling**.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.locomo_data import Conversation, Ranker

K = 10
OUTCOMES = ("hit", "no observation in evidence", "missed, shares a word", "missed, shares no word")


def _question_words(text: str, names: frozenset[str]) -> frozenset[str]:
    from graymatter.retrieval.query import query_terms
    from graymatter.retrieval.relevance import stems

    words = query_terms(text)
    return (frozenset().union(*stems(words)) if words else frozenset()) - names


def outcomes(conv: Conversation, rank: Ranker) -> dict[str, int]:
    """How many of ``conv``'s questions fall in each of :data:`OUTCOMES` under ``rank``."""
    from graymatter.retrieval.relevance import stems

    names = frozenset().union(*stems([name.lower() for name in conv.speakers]))
    by_turn: dict[str, list[str]] = {}
    for observation in conv.observations:
        for dia_id in observation.dia_ids:
            by_turn.setdefault(dia_id, []).append(observation.text)
    counts = dict.fromkeys(OUTCOMES, 0)
    for question in conv.questions:
        evidence = [text for dia_id in sorted(question.evidence) for text in by_turn.get(dia_id, [])]
        if not evidence:
            counts["no observation in evidence"] += 1
            continue
        ranked = rank(question.text)[:K]
        if any(dia_id in question.evidence for dia_id in ranked):
            counts["hit"] += 1
            continue
        words = _question_words(question.text, names)
        shares = any(words & fact for fact in stems(evidence))
        counts["missed, shares a word" if shares else "missed, shares no word"] += 1
    return counts


def profile(per_conversation: Sequence[dict[str, int]]) -> dict[str, Any]:
    """Summed outcomes, their share of the questions, and the lexical ceiling of hit@10."""
    total = {name: sum(part[name] for part in per_conversation) for name in OUTCOMES}
    questions = sum(total.values())
    ceiling = (total["hit"] + total["missed, shares a word"]) / questions if questions else 0.0
    return {"questions": questions, **total, "lexical_ceiling_hit_at_10": round(ceiling, 4)}


def row(label: str, split: str, summary: dict[str, Any]) -> list[object]:
    """One table row: system, split, the outcome counts, the lexical ceiling."""
    return [
        label,
        split,
        summary["questions"],
        *(summary[name] for name in OUTCOMES),
        summary["lexical_ceiling_hit_at_10"],
    ]


HEADERS = ["system", "split", "questions", *OUTCOMES, "lexical ceiling (hit@10)"]


def measure(
    systems: Sequence[tuple[str, Any]],
    conversations: Sequence[Conversation],
    splits: dict[str, Sequence[str]],
) -> tuple[dict[str, Any], list[list[object]]]:
    """Outcomes of each ``(label, build)`` system per split (``splits``: name -> conversation ids)."""
    results: dict[str, Any] = {}
    rows: list[list[object]] = []
    for label, build in systems:
        per = {conv.sample_id: outcomes(conv, build(conv)) for conv in conversations}
        results[label] = {}
        for split, ids in splits.items():
            summary = profile([counts for cid, counts in per.items() if cid in ids])
            results[label][split] = summary
            rows.append(row(label, split, summary))
    return results, rows
