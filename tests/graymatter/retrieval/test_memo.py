"""remember_bounded: a memo never grows past its limit, keeps the newest entries and the value just stored."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from graymatter.retrieval.memo import remember_bounded


@given(keys=st.lists(st.text(max_size=5), max_size=200), limit=st.integers(min_value=1, max_value=40))
def test_a_memo_stays_within_its_limit_and_keeps_what_was_just_stored(keys: list[str], limit: int) -> None:
    memo: dict[str, int] = {}
    for value, key in enumerate(keys):
        remember_bounded(memo, key, value, limit)
        assert len(memo) <= limit
        assert memo[key] == value


def test_a_full_memo_drops_its_oldest_eighth() -> None:
    memo = {f"k{i}": i for i in range(16)}
    remember_bounded(memo, "new", 99, 16)
    assert list(memo) == [f"k{i}" for i in range(2, 16)] + ["new"]
