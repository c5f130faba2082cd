"""The hook payload parser: BOM, empty, oversized, unknown fields, wrong types; only PayloadError."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graymatter.faces.hooks.payload import (
    MAX_FIELD_CHARS,
    MAX_PAYLOAD_BYTES,
    HookPayload,
    PayloadError,
    parse_payload,
    read_payload,
)

CLAUDE_PROMPT = {
    "session_id": "abc-123",
    "prompt_id": "p-9",
    "transcript_path": "/home/u/.claude/projects/x/abc-123.jsonl",
    "cwd": "/work/project",
    "permission_mode": "default",
    "effort": "high",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "what does the build use?",
}


def test_a_claude_code_prompt_payload_yields_its_fields() -> None:
    payload = parse_payload(json.dumps(CLAUDE_PROMPT).encode())
    assert payload == HookPayload(
        session_id="abc-123",
        cwd="/work/project",
        event_name="UserPromptSubmit",
        prompt="what does the build use?",
    )


def test_a_utf8_bom_is_skipped() -> None:
    raw = b"\xef\xbb\xbf" + json.dumps({"session_id": "s", "source": "resume"}).encode()
    assert parse_payload(raw) == HookPayload(session_id="s", source="resume")


@pytest.mark.parametrize("raw", [b"", b"   \n\t", b"\xef\xbb\xbf", b"\xef\xbb\xbf \r\n"])
def test_an_empty_payload_has_no_fields(raw: bytes) -> None:
    assert parse_payload(raw) == HookPayload()


def test_unknown_fields_are_ignored_and_wrong_types_count_as_absent() -> None:
    raw = json.dumps(
        {"session_id": 7, "cwd": ["/x"], "prompt": {"a": 1}, "source": "", "future_field": {"deep": [1, 2]}}
    ).encode()
    assert parse_payload(raw) == HookPayload()


def test_an_overlong_identifier_counts_as_absent_but_a_long_prompt_is_kept() -> None:
    long = "x" * (MAX_FIELD_CHARS + 1)
    payload = parse_payload(json.dumps({"session_id": long, "cwd": long, "prompt": long}).encode())
    assert (payload.session_id, payload.cwd, payload.prompt) == (None, None, long)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{not json", "payload is not valid JSON"),
        (b"[1, 2]", "payload is not a JSON object"),
        (b'"text"', "payload is not a JSON object"),
        (b"\xff\xfe{}", "payload is not UTF-8"),
        (b"[" * 100_000, "payload is not valid JSON"),
    ],
)
def test_a_payload_that_is_not_one_json_object_is_refused(raw: bytes, message: str) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_payload(raw)
    assert str(caught.value) == message


def test_an_oversized_payload_is_refused_after_reading_one_byte_over_the_bound() -> None:
    body = json.dumps({"prompt": "y" * MAX_PAYLOAD_BYTES}).encode()
    stream = io.BytesIO(body)
    with pytest.raises(PayloadError, match="payload is over 1048576 bytes"):
        read_payload(stream)
    assert stream.tell() == MAX_PAYLOAD_BYTES + 1


def test_a_payload_at_the_bound_is_read() -> None:
    prompt = "z" * (MAX_PAYLOAD_BYTES - len(json.dumps({"prompt": ""})))
    body = json.dumps({"prompt": prompt}).encode()
    assert len(body) == MAX_PAYLOAD_BYTES
    assert read_payload(io.BytesIO(body)).prompt == prompt


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@given(
    known=st.fixed_dictionaries(
        {},
        optional={
            name: st.text(min_size=1, max_size=40).filter(str.strip)
            for name in ("session_id", "cwd", "hook_event_name", "source", "prompt", "trigger", "reason")
        },
    ),
    extra=st.dictionaries(st.text(max_size=12).map(lambda k: "x_" + k), json_values, max_size=5),
    bom=st.booleans(),
)
def test_known_string_fields_survive_any_unknown_fields(
    known: dict[str, str], extra: dict[str, object], bom: bool
) -> None:
    raw = (b"\xef\xbb\xbf" if bom else b"") + json.dumps({**extra, **known}).encode()
    payload = parse_payload(raw)
    assert payload.session_id == known.get("session_id")
    assert payload.cwd == known.get("cwd")
    assert payload.event_name == known.get("hook_event_name")
    assert payload.prompt == known.get("prompt")
    assert (payload.source, payload.trigger, payload.reason) == tuple(
        known.get(k) for k in ("source", "trigger", "reason")
    )


@given(st.binary(max_size=200))
def test_any_bytes_parse_or_raise_payload_error(raw: bytes) -> None:
    try:
        result = parse_payload(raw)
    except PayloadError:
        return
    assert isinstance(result, HookPayload)
