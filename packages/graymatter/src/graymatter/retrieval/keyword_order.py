"""The total order of a keyword-only recall, read as it is built: no sort, one row per candidate read.

When only the keyword signal ranked (ranks 1..n, each once), no confidence weight applies and the keyword
weight is a normal float, the fused score ``w / (k + rank)`` falls strictly with the rank, so the total
order of :func:`.fusion.order` is the keyword order itself. :class:`KeywordOrder` builds each row as
:func:`.fusion.select` reads it (about ``top_k`` of a pool of 100), exactly as the sorted path builds it
(ADR 0011, "Recall latency, session 5").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Generic, TypeVar, cast, overload

Row = TypeVar("Row")
RowMaker = Callable[[str, datetime, int, int, int, float, float, float], Row]
"""``(fact id, created_at, keyword rank, vector rank, recency rank, fused, factor, final) -> row``."""


def keyword_only(
    ranks: Mapping[str, tuple[int, int, int]], weight: float, k: int, confidence_weight: float
) -> list[str] | None:
    """The ids by keyword rank when only the keyword signal ranked (ranks 1..n, each once), every
    confidence factor is 1 and the fused scores fall strictly with the rank; ``None`` otherwise."""
    count = len(ranks)
    # A normal weight over k + rank <= 2**40 falls by at least 2**-40 of itself per rank: never a tie.
    if confidence_weight != 0.0 or not 1e-290 < weight < 1e290 or not 0 <= k <= 2**40 - count:
        return None
    by_rank: list[str | None] = [None] * count
    for fact_id, (keyword_rank, vector_rank, recency_rank) in ranks.items():
        if (
            vector_rank
            or recency_rank
            or not 0 < keyword_rank <= count
            or by_rank[keyword_rank - 1] is not None
        ):
            return None
        by_rank[keyword_rank - 1] = fact_id
    return cast(list[str], by_rank)


class KeywordOrder(Sequence[Row], Generic[Row]):
    """``ids`` (best first) as the rows of :func:`.fusion.order`, each built when it is read."""

    def __init__(
        self,
        ids: list[str],
        info: Mapping[str, tuple[datetime, str]],
        weight: float,
        k: int,
        make: RowMaker[Row],
    ) -> None:
        self._ids, self._info, self._weight, self._k, self._make = ids, info, weight, k, make

    def __len__(self) -> int:
        return len(self._ids)

    def _row(self, index: int) -> Row:
        rank = index + 1
        base = 0.0 + self._weight / (self._k + rank)  # rrf_score's operations: the same float
        fact_id = self._ids[index]
        return self._make(fact_id, self._info[fact_id][0], rank, 0, 0, base, 1.0, base * 1.0)

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(len(self._ids)))]
        if index < 0:
            index += len(self._ids)
        if not 0 <= index < len(self._ids):
            raise IndexError(index)
        return self._row(index)
