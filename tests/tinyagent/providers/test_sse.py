"""The SSE parser: line endings, comments, multi-line data, event names, chunk boundaries."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyagent.providers.sse import SSEError, SSEEvent, SSEParser, iter_sse, iter_sse_bytes

# Field values may not contain line breaks; anything else (including ":" and unicode) is fair game.
line_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=30
)
event_name = st.one_of(st.none(), line_text.filter(lambda s: s != ""))
events_strategy = st.lists(
    st.tuples(event_name, st.lists(line_text, min_size=1, max_size=4)), min_size=0, max_size=8
)


def _serialise(events: list[tuple[str | None, list[str]]], newline: str, comments: bool) -> str:
    out = []
    for name, lines in events:
        if comments:
            out.append(f": keep-alive{newline}")
        if name is not None:
            out.append(f"event: {name}{newline}")
        out.extend(f"data: {line}{newline}" for line in lines)
        out.append(newline)
    return "".join(out)


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces, last = [], 0
    for point in points:
        pieces.append(text[last:point])
        last = point
    pieces.append(text[last:])
    return pieces


@settings(max_examples=200, deadline=None)
@given(
    events=events_strategy,
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    comments=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_round_trip_any_line_ending_and_chunking(events, newline, comments, cuts):
    text = _serialise(events, newline, comments)
    parsed = list(iter_sse(_split(text, cuts)))
    assert [(e.event, e.data) for e in parsed] == [(name, "\n".join(lines)) for name, lines in events]


@settings(max_examples=100, deadline=None)
@given(events=events_strategy, cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12))
def test_bytes_split_inside_utf8_characters(events, cuts):
    data = _serialise(events, "\r\n", False).encode("utf-8")
    points = sorted({min(c, len(data)) for c in cuts})
    chunks, last = [], 0
    for point in points:
        chunks.append(data[last:point])
        last = point
    chunks.append(data[last:])
    parsed = list(iter_sse_bytes(chunks))
    assert [(e.event, e.data) for e in parsed] == [(name, "\n".join(lines)) for name, lines in events]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=6))
def test_arbitrary_input_never_raises(text, cuts):
    for event in iter_sse(_split(text, cuts)):
        assert isinstance(event, SSEEvent)


def test_cr_at_chunk_end_followed_by_lf_is_one_line_ending():
    parser = SSEParser()
    assert parser.feed("data: a\r") == []
    # The LF completing the CRLF must not count as a blank line (which would dispatch "a" alone).
    assert parser.feed("\ndata: b\r") == []
    assert parser.feed("\n\r\n") == [SSEEvent(data="a\nb")]


def test_field_rules():
    text = "data\ndata:x\ndata:  two spaces\nevent:name\nid: 7\nretry: 100\nbogus: 1\n\n"
    [event] = iter_sse([text])
    assert event == SSEEvent(data="\nx\n two spaces", event="name", id="7")


def test_blank_event_without_data_is_not_dispatched_and_event_name_resets():
    events = list(iter_sse(["event: ping\n\n", "data: 1\n\n"]))
    assert events == [SSEEvent(data="1")]


def test_trailing_event_without_blank_line_is_discarded():
    assert list(iter_sse(["data: complete\n\n", "data: partial"])) == [SSEEvent(data="complete")]


def test_done_sentinel_is_plain_data():
    assert list(iter_sse(["data: [DONE]\n\n"])) == [SSEEvent(data="[DONE]")]


def test_unbounded_line_or_event_is_refused():
    with pytest.raises(SSEError):
        list(iter_sse(["data: " + "x" * 50], max_pending=32))
    with pytest.raises(SSEError):
        list(iter_sse(["data: aaaaaaaaaa\n"] * 10, max_pending=32))
    assert list(iter_sse(["data: aaaaaaaaaa\n\n"] * 10, max_pending=32)) == [SSEEvent(data="a" * 10)] * 10
