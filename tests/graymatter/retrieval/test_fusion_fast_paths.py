"""The per-candidate loops of fusion (``order``, ``evidence_order``) against their plain definitions: the
faster spelling (ADR 0011, "Recall latency, session 5") must give the same lists, to the last bit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.models import SignalWeights
from graymatter.retrieval.fusion import confidence_factor, evidence_order, order, rrf_score

BASE = datetime(2026, 1, 1, tzinfo=UTC)
LABELS = ["verified", "inferred", "unverified"]


def _plain_evidence_order(
    scores: dict[str, float], created: dict[str, datetime], newest_first: bool, near_tie: float, res: float
) -> list[str]:
    ordered = sorted(scores, key=lambda fid: (-scores[fid], created[fid], fid))
    if not newest_first or near_tie <= 0:
        return ordered
    tiers: list[list[str]] = []
    for fid in ordered:
        if not tiers or scores[fid] < (1.0 - near_tie) * scores[tiers[-1][0]]:
            tiers.append([])
        tiers[-1].append(fid)
    out: list[str] = []
    for tier in tiers:
        group: dict[str, int] = {}
        newest: float | None = None
        for fid in sorted(tier, key=lambda f: -created[f].timestamp()):
            moment = created[fid].timestamp()
            if newest is None or newest - moment > res:
                newest = moment
            group[fid] = -int(newest * 1000)
        out.extend(sorted(tier, key=lambda f: group[f]))
    return out


rows = st.lists(
    st.tuples(
        st.sampled_from([1.0, 0.99, 0.985, 0.5, 0.49]) | st.floats(0.01, 10.0),
        st.integers(0, 20_000),  # seconds after BASE: groups within and across the hour
        st.sampled_from(LABELS),
        st.integers(0, 30),
        st.integers(0, 30),
        st.integers(0, 30),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(rows=rows, newest_first=st.booleans(), near_tie=st.sampled_from([0.0, 0.02, 0.1]))
def test_evidence_order_is_its_plain_definition(
    rows: list[tuple], newest_first: bool, near_tie: float
) -> None:
    scores = {f"f{i:03d}": row[0] for i, row in enumerate(rows)}
    created = {f"f{i:03d}": BASE + timedelta(seconds=row[1]) for i, row in enumerate(rows)}
    for res in (0.0, 3600.0):
        expected = _plain_evidence_order(scores, created, newest_first, near_tie, res)
        got = evidence_order(scores, created, newest_first=newest_first, near_tie=near_tie, resolution_s=res)
        assert got == expected


@settings(max_examples=300, deadline=None)
@given(
    rows=rows,
    weights=st.tuples(
        st.sampled_from([0.0, 1.0, 0.7]), st.sampled_from([0.0, 1.0, 0.25]), st.sampled_from([0.0, 0.5])
    ),
    confidence_weight=st.sampled_from([0.0, 0.3, 0.5]),
)
def test_order_is_its_plain_definition(rows: list[tuple], weights: tuple, confidence_weight: float) -> None:
    signal = SignalWeights(keyword=weights[0], vector=weights[1], recency=weights[2])
    ranks = {f"f{i:03d}": (row[3], row[4], row[5]) for i, row in enumerate(rows)}
    info = {f"f{i:03d}": (BASE + timedelta(seconds=row[1] // 7), row[2]) for i, row in enumerate(rows)}
    expected = []
    for fid, (kr, vr, rr) in ranks.items():
        base = rrf_score(kr, vr, rr, signal, 60)
        if base <= 0.0:
            continue
        factor = confidence_factor(info[fid][1], confidence_weight)
        expected.append((fid, info[fid][0], kr, vr, rr, base, factor, base * factor))
    expected.sort(key=lambda e: (-e[7], e[1], e[0]))
    got = order(ranks, info, weights=signal, k=60, confidence_weight=confidence_weight)
    assert [
        (
            s.fact_id,
            s.created_at,
            s.keyword_rank,
            s.vector_rank,
            s.recency_rank,
            s.fused_score,
            s.factor,
            s.final_score,
        )
        for s in got
    ] == expected


@settings(max_examples=200, deadline=None)
@given(
    order_of=st.permutations(list(range(30))),
    count=st.integers(0, 30),
    keyword=st.sampled_from([1.0, 0.3, 2.5]),
    labels=st.lists(st.sampled_from(LABELS), min_size=30, max_size=30),
    seconds=st.lists(st.integers(0, 5), min_size=30, max_size=30),
)
def test_a_keyword_only_order_is_read_as_it_is_built(
    order_of: list[int], count: int, keyword: float, labels: list[str], seconds: list[int]
) -> None:
    """Keyword ranks alone, no confidence weight: the rows come in keyword order, built as they are read,
    the same rows as the sorted ones (here through a plain re-implementation)."""
    signal = SignalWeights(keyword=keyword, vector=1.0, recency=0.5)
    ids = [f"f{i:03d}" for i in order_of[:count]]
    ranks = {fid: (rank, 0, 0) for rank, fid in enumerate(ids, 1)}
    info = {fid: (BASE + timedelta(seconds=seconds[i]), labels[i]) for i, fid in enumerate(ids)}
    got = order(ranks, info, weights=signal, k=60)
    rows = [(s.fact_id, s.keyword_rank, s.fused_score, s.factor, s.final_score) for s in got]
    expected = sorted(
        (
            (fid, kr, rrf_score(kr, 0, 0, signal, 60), 1.0, rrf_score(kr, 0, 0, signal, 60))
            for fid, (kr, _, _) in ranks.items()
        ),
        key=lambda e: (-e[4], info[e[0]][0], e[0]),
    )
    assert rows == expected and len(got) == count
    assert [s.fact_id for s in got[2:5]] == [e[0] for e in expected[2:5]]
    if count:
        assert got[-1].fact_id == expected[-1][0]
