"""The recency signal: candidates ranked by age (``created_at``), newest first, at a fixed resolution.

With a 30-day half-life, facts written seconds or minutes apart have the same decay to within 0.1 %;
ranking them apart would let sub-hour noise reorder relevance (a strict recency rank carries weight
0.5/(k+rank) in the fusion, more than the gap between neighbouring keyword ranks). So, whenever a
relevance signal (keyword or vector) ranked a candidate, candidates written within
``resolution_s`` of the newest member of their group share that group's rank (competition ranking:
1, 1, 1, 4, ...; groups formed newest first). Without a relevance signal (empty query, recency-only
weights) the ranks stay exact, so recency-only recall still reproduces a sliding window.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

DEFAULT_RESOLUTION_S = 3600.0


def recency_ranks(created: Mapping[str, datetime], *, resolution_s: float, exact: bool) -> dict[str, int]:
    """1-based recency rank per fact id from ``id -> created_at`` (see the module docstring for ties)."""
    ordered = sorted(created.items(), key=lambda item: (-item[1].timestamp(), item[0]))
    if exact or resolution_s <= 0:
        return {fact_id: position for position, (fact_id, _) in enumerate(ordered, start=1)}
    ranks: dict[str, int] = {}
    group_newest: float | None = None
    group_rank = 0
    for position, (fact_id, created_at) in enumerate(ordered, start=1):
        moment = created_at.timestamp()
        if group_newest is None or group_newest - moment > resolution_s:
            group_newest = moment
            group_rank = position
        ranks[fact_id] = group_rank
    return ranks
