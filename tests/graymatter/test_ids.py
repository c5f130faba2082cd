"""ULIDs: one at a time and in bulk, always valid and strictly increasing within the process."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import ids
from graymatter.ids import is_ulid, new_ulid, new_ulids


def _decode(value: str) -> int:
    number = 0
    for char in value:
        number = number * 32 + ids.ALPHABET.index(char)
    return number


def test_bulk_ids_are_valid_distinct_and_continue_the_sequence() -> None:
    before = new_ulid()
    batch = new_ulids(3000)
    after = new_ulid()
    assert len(batch) == len(set(batch)) == 3000 and all(is_ulid(i) for i in batch)
    assert [before, *batch, after] == sorted([before, *batch, after])
    numbers = [_decode(i) for i in batch]
    assert numbers == list(range(numbers[0], numbers[0] + 3000))  # consecutive random parts, one moment
    assert abs((numbers[0] >> 80) - time.time() * 1000) < 60_000
    assert new_ulids(0) == []


def test_the_bulk_encoding_is_the_one_by_one_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    for start in (0, (1 << 20) - 2, (1 << 80) - 5000, 123_456_789_012_345_678):
        monkeypatch.setattr(ids, "_last_ms", 1 << 47)
        monkeypatch.setattr(ids, "_last_rand", start - 1)
        batch = new_ulids(4)
        moment, first = _decode(batch[0]) >> 80, _decode(batch[0]) & ((1 << 80) - 1)
        expected = [ids.encode(moment, 10) + ids.encode(first + k, 16) for k in range(4)]
        assert batch == expected
        if start + 4 <= 1 << 80:
            assert (moment, first) == (1 << 47, start)
        else:  # the random part would wrap: the next millisecond starts at zero, still increasing
            assert (moment, first) == ((1 << 47) + 1, 0)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.integers(0, (1 << 80) - 1),
        st.integers(0, 1 << 60).map(lambda v: (v | 1023) - 2),  # just below a block of 1,024
        st.integers(1, 3_000).map(lambda back: (1 << 80) - back),  # about to wrap
    ),
    st.integers(1, 2_500),
)
def test_a_run_is_its_first_value_counted_up(last_rand: int, count: int) -> None:
    """``new_ulid_run`` (built a block of 1,024 ids at a time) gives the ids of the values from its first
    on, whatever the random part it starts from."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ids, "_last_ms", int(time.time() * 1000) + 60_000)  # this millisecond goes on
        patch.setattr(ids, "_last_rand", last_rand)
        first, run = ids.new_ulid_run(count)
    assert [_decode(i) for i in run] == list(range(first, first + count))
    assert all(is_ulid(i) for i in run)
