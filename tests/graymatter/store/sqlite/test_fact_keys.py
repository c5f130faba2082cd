"""Schema 9's stored fact ids (``store/sqlite/keys.py``): a canonical ULID in 16 bytes that sort as its
text does, any other id as it is, and back again exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import ids
from graymatter.ids import is_ulid, new_ulid, new_ulid_run, new_ulids
from graymatter.store.sqlite import keys
from graymatter.store.sqlite.keys import bulk_keys, fact_id, fact_key, fact_keys

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ulids = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from("01234567"),
    st.text(st.sampled_from(_CROCKFORD), min_size=25, max_size=25),
)
"""Every canonical ULID (128 bits: the first character at most 7)."""
near_ulids = st.one_of(
    ulids.map(str.lower),
    ulids.map(lambda u: u[:25]),
    ulids.map(lambda u: u + "0"),
    ulids.map(lambda u: "8" + u[1:]),  # 130 bits: no ULID
    st.builds(lambda u, i, c: u[:i] + c + u[i + 1 :], ulids, st.integers(0, 25), st.sampled_from("ILOU_ +-")),
).filter(lambda text: not (is_ulid(text) and text[0] <= "7"))
"""Texts that look like ULIDs and are not canonical ones."""
any_ids = st.one_of(ulids, near_ulids, st.text(max_size=40))


@settings(max_examples=300)
@given(ulids)
def test_a_ulid_is_stored_in_16_bytes_and_read_back(ulid: str) -> None:
    key = fact_key(ulid)
    assert isinstance(key, bytes) and len(key) == 16
    assert int.from_bytes(key, "big") == sum(
        _CROCKFORD.index(c) << (5 * (25 - i)) for i, c in enumerate(ulid)
    )
    keys._IDS.clear()
    assert fact_id(key) == ulid
    assert fact_id(key) == ulid  # remembered


@settings(max_examples=300)
@given(near_ulids)
def test_anything_else_is_stored_as_it_is(text: str) -> None:
    assert fact_key(text) == text and fact_id(text) == text


@settings(max_examples=200)
@given(st.lists(ulids, min_size=2, max_size=20))
def test_stored_ulids_sort_as_their_texts(ids: list[str]) -> None:
    assert sorted(map(fact_key, ids)) == [fact_key(i) for i in sorted(ids)]  # type: ignore[type-var]


@settings(max_examples=300)
@given(st.one_of(st.lists(any_ids, max_size=12), st.lists(any_ids, min_size=keys.BATCH_KEYS, max_size=40)))
def test_a_batch_is_stored_as_each_id_alone(ids: list[str]) -> None:
    assert fact_keys(ids) == [fact_key(i) for i in ids]
    assert [type(k) for k in fact_keys(ids)] == [type(fact_key(i)) for i in ids]
    assert [fact_id(k) for k in fact_keys(ids)] == ids
    bound = bulk_keys(ids)  # what a bulk insert binds: the same values, a ULID's bytes in a bytearray
    assert bound == fact_keys(ids)
    assert [type(k) for k in bound] == [bytearray if isinstance(fact_key(i), bytes) else str for i in ids]


def test_the_ids_graymatter_makes_are_all_stored_in_16_bytes() -> None:
    made = [*new_ulids(1_000), new_ulid()]
    stored = fact_keys(made)
    assert all(isinstance(k, bytes) and len(k) == 16 for k in stored)
    assert [fact_id(k) for k in stored] == made
    assert sorted(stored) == stored  # type: ignore[type-var]  # increasing, as the ids are


def test_a_run_of_ids_is_its_first_value_counted_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a bulk write's store rows are built of (``store.rows.NewFacts.first_id``)."""
    for last_rand in (None, (1 << 80) - 5):  # a fresh millisecond; a random part about to wrap
        if last_rand is not None:
            monkeypatch.setattr(ids, "_last_ms", ids._last_ms + 10)
            monkeypatch.setattr(ids, "_last_rand", last_rand)
        first, made = new_ulid_run(300)
        assert fact_keys(made) == [(first + i).to_bytes(16, "big") for i in range(300)]
        assert made == sorted(made) and len(set(made)) == 300
