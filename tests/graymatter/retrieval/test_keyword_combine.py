"""``keyword.combine`` (own scores plus context loans) against its plain definition, including the shortcut
that hands the own scores on as they are when nothing is lent or retired (ADR 0011, "Recall latency,
session 7")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter.retrieval.keyword import KeywordEvidence, combine

IDS = [f"f{i}" for i in range(8)]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _plain(
    evidence: KeywordEvidence, created: dict[str, datetime], limit: int, max_gap_s: float
) -> tuple[dict[str, float], dict[str, tuple[str, str | None]]]:
    scores = {fid: score for fid, score in evidence.own.items() if fid in created}
    origin: dict[str, tuple[str, str | None]] = {fid: (evidence.sources[fid], None) for fid in scores}
    for borrower, offers in evidence.loans.items():
        when = created.get(borrower)
        if when is None:
            continue
        for loan, lender in offers:
            lent_at = created.get(lender)
            if lent_at is not None and abs((when - lent_at).total_seconds()) <= max_gap_s:
                scores[borrower] = scores.get(borrower, 0.0) + loan
                origin.setdefault(borrower, ("context", lender))
                break
    if len(scores) > limit:
        scores = dict(sorted(scores.items(), key=lambda item: -item[1])[:limit])
        origin = {fid: origin[fid] for fid in scores}
    return scores, origin


@settings(max_examples=200, deadline=None)
@given(
    own=st.dictionaries(st.sampled_from(IDS), st.floats(0.0, 50.0, allow_nan=False), max_size=8),
    phrase_only=st.sets(st.sampled_from(IDS)),
    loans=st.dictionaries(
        st.sampled_from(IDS),
        st.lists(
            st.tuples(st.floats(0.0, 20.0, allow_nan=False), st.sampled_from(IDS)), min_size=1, max_size=3
        ),
        max_size=4,
    ),
    hours=st.dictionaries(st.sampled_from(IDS), st.integers(0, 5), min_size=0, max_size=8),
    limit=st.integers(1, 10),
)
def test_combine_is_its_plain_definition(
    own: dict[str, float],
    phrase_only: set[str],
    loans: dict[str, list[tuple[float, str]]],
    hours: dict[str, int],
    limit: int,
) -> None:
    sources = {fid: "phrase" if fid in phrase_only else "match" for fid in own}
    created = {fid: T0 + timedelta(hours=h) for fid, h in hours.items()}
    for lent in (loans, {}):
        evidence = KeywordEvidence(own=dict(own), sources=dict(sources), loans=lent)
        got = combine(evidence, created, limit, max_gap_s=3600.0)
        want = _plain(evidence, created, limit, 3600.0)
        assert got == want
        assert list(got[0]) == list(want[0]) and list(got[1]) == list(want[1])  # the same order too
        assert evidence.own == own  # never changed
