"""What one PostgreSQL recall read ahead, and the call shapes it learned: the state behind ``recall.py``."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from graymatter.store.base import ScoredId

START, KEYWORD, PHRASES, NEIGHBOURS, RECENT, RANKS = range(6)
"""The order in which the pipeline makes its calls: the read answers the phrase search, the neighbours
and the newest facts once each, in this order; ranking columns and rows (``RANKS``) at any point."""


@dataclass
class Hints:
    """The shapes of the pipeline's later calls, as last seen (they follow its configuration)."""

    recent: int = 50
    confidences: tuple[str, ...] | None = None
    """The last confidence filter a recall's newest facts were asked with (read ahead too)."""
    window: int = 2
    lenders: int = 20
    recent_with_aliases: bool = False
    """Whether a recall that asked for aliases went on to ask for the newest facts (only one whose weights
    leave the keyword signal out does): only then does the aliases call read them ahead."""


@dataclass
class RecallRead:
    """What one keyword round trip read, for the calls of the same recall that follow it."""

    scope: tuple[tuple[str, ...], tuple[str, ...] | None, int]
    generation: int
    born: float = field(default_factory=time.monotonic)
    stage: int = START
    agents: tuple[str, ...] = ()
    """The namespaces whose newest facts were read (by the aliases call, which opens a recall)."""
    changes: int | None = None
    """The full-text index's change count, read by the aliases call (``bm25.CHANGES_SQL``)."""
    phrases: list[str] = field(default_factory=list)
    """The adjacent query-term pairs read ahead; per matching fact, each one's BM25 part."""
    phrase_parts: list[tuple[str, datetime, dict[int, float]]] = field(default_factory=list)
    window: int = 0
    lenders: dict[str, list[str]] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)
    """Facts whose neighbours were read (those not in ``lenders`` cannot lend)."""
    recent: list[tuple[tuple[str, ...] | None, list[tuple[str, str]]]] | None = None
    """The newest live facts of ``agents`` (``(id, confidence)``, at most ``recent_limit``), per filter read
    (``None``: unfiltered)."""
    recent_limit: int = 0
    rank: dict[str, tuple[datetime, str]] = field(default_factory=dict)
    rows: dict[str, Sequence[Any]] = field(default_factory=dict)


def speculated_phrases(query_terms: Sequence[str], selected: Sequence[str]) -> list[str]:
    """The phrases the pipeline searches next: adjacent query terms both selected, distinct, in order."""
    chosen = set(selected)
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(query_terms) if a in chosen and b in chosen and a != b]
    return list(dict.fromkeys(pairs))


def phrase_hits(read: RecallRead, phrases: list[str], limit: int) -> list[ScoredId]:
    """The phrase search for ``phrases`` (some of those read ahead), as ``Store.keyword_search`` ranks it:
    each fact's parts summed in the order asked (the order SQL sums them), best first, at most ``limit``."""
    where = {phrase: i for i, phrase in enumerate(read.phrases, start=1)}
    order = [where[p] for p in phrases]
    scored = []
    for fact_id, created, parts in read.phrase_parts:
        present = [parts[i] for i in order if i in parts]
        if present:
            score = present[0]
            for part in present[1:]:
                score += part
            scored.append((-score, created, fact_id))
    scored.sort()
    return [ScoredId(fid, -neg) for neg, _, fid in scored[:limit]]
