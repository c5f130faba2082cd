"""``validation.text``: one encoding per text, the same contract as two (size first, then lone surrogates)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graymatter.errors import InvalidInput
from graymatter.validation import text


def _expected(value: str, max_bytes: int) -> str:
    """The contract spelled out: non-blank, within ``max_bytes`` as UTF-8 (a lone surrogate measured as
    three bytes), then valid Unicode."""
    if not value.strip():
        return "text is empty"
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        return f"text is {size} bytes; the limit is {max_bytes} bytes"
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        return "text is not valid Unicode (lone surrogate)"
    return "ok"


@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=12), st.integers(0, 40))
def test_text_accepts_and_refuses_exactly_as_the_contract_says(value: str, max_bytes: int) -> None:
    try:
        assert text(value, max_bytes) is value
        outcome = "ok"
    except InvalidInput as exc:
        outcome = str(exc)
    assert outcome == _expected(value, max_bytes)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ab\ud800", "text is not valid Unicode (lone surrogate)"),
        ("é" * 3 + "\ud800", "text is 9 bytes; the limit is 8 bytes"),
        ("abcdefghi", "text is 9 bytes; the limit is 8 bytes"),
        ("ééééé", "text is 10 bytes; the limit is 8 bytes"),
    ],
)
def test_the_size_is_reported_before_a_lone_surrogate(value: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        text(value, 8)
    assert str(caught.value) == message


def test_a_text_that_is_not_a_string_is_refused_by_field_name() -> None:
    with pytest.raises(InvalidInput, match=r"^note must be a string$"):
        text(b"bytes", 10, field="note")
