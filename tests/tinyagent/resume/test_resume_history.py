"""In-process tests of `tinyagent.resume.validate.validate_checkpoint` on the history: structure and
call/result pairing, and hypothesis-generated corruptions that must all be refused cleanly (one line,
category named, no transcript content)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.resume_checkpoints import (
    SECRET,
    Call,
    checkpoint_bytes,
    checkpoint_document,
    make_checkpoint,
    turn_messages,
)
from support.resume_refusals import refusal, refused_document
from tinyagent.resume.refusal import ResumeRefused
from tinyagent.resume.validate import validate_checkpoint
from tinyagent.trajectory.models import Trajectory
from tinyagent.types import Message

VALID = make_checkpoint()
VALID_BYTES = checkpoint_bytes(VALID)


# ------------------------------------------------------------------------------------------------
# History structure and pairing


def with_messages(messages: list[Message], *, steps: int | None = None) -> bytes:
    trajectory = make_checkpoint()
    trajectory.messages = messages
    assistant_turns = sum(m.role == "assistant" for m in messages)
    trajectory.totals.steps = steps if steps is not None else max(1, assistant_turns)
    return checkpoint_bytes(trajectory)


def head() -> list[Message]:
    return list(VALID.messages[:2])


def test_history_without_system_first_is_refused() -> None:
    assert refusal(with_messages(VALID.messages[1:])).category == "history"


def test_history_with_a_different_task_message_is_refused() -> None:
    messages = head()
    messages[1] = Message(role="user", content="another task")
    assert refusal(with_messages(messages)).category == "history"


def test_second_system_message_is_refused() -> None:
    messages = [*VALID.messages, Message(role="system", content="new rules")]
    assert refusal(with_messages(messages)).category == "history"


def test_missing_tool_result_in_the_middle_is_refused() -> None:
    messages = head() + turn_messages([Call("a"), Call("b")])
    del messages[3]
    messages += turn_messages([Call("c")])
    refused = refusal(with_messages(messages))
    assert refused.category == "tool results"


def test_trailing_unanswered_tool_call_is_refused() -> None:
    messages = [*VALID.messages, *turn_messages([Call("x"), Call("y")])[:2]]
    refused = refusal(with_messages(messages))
    assert refused.category == "tool results"
    assert "inside a tool batch" in refused.advice


def test_duplicate_tool_result_is_refused() -> None:
    messages = head() + turn_messages([Call("a")])
    messages.append(messages[-1])
    assert refusal(with_messages(messages)).category == "tool results"


def test_orphaned_tool_result_is_refused() -> None:
    messages = head() + turn_messages([Call("a")])
    messages.append(Message(role="tool", content="x", tool_call_id="zzz", name="bash"))
    refused = refusal(with_messages(messages))
    assert refused.category == "tool results"
    assert "orphaned" in refused.advice


def test_result_matching_only_an_earlier_turn_is_orphaned() -> None:
    messages = head() + turn_messages([Call("a")]) + turn_messages([Call("b")])
    messages.append(Message(role="tool", content="x", tool_call_id="a", name="bash"))
    assert refusal(with_messages(messages)).category == "tool results"


def test_tool_result_after_a_user_message_is_orphaned() -> None:
    messages = head() + turn_messages([Call("a")])
    messages.append(Message(role="user", content="nudge"))
    messages.append(Message(role="tool", content="x", tool_call_id="a", name="bash"))
    assert refusal(with_messages(messages)).category == "tool results"


def test_results_out_of_call_order_are_refused() -> None:
    messages = head() + turn_messages([Call("a"), Call("b")])
    messages[3], messages[4] = messages[4], messages[3]
    assert refusal(with_messages(messages)).category == "tool results"


def test_duplicate_call_ids_within_one_turn_are_refused() -> None:
    messages = head() + turn_messages([Call("a"), Call("a")])
    assert refusal(with_messages(messages)).category == "tool results"


def test_empty_call_id_is_refused() -> None:
    messages = head() + turn_messages([Call("")])
    assert refusal(with_messages(messages)).category == "tool results"


def test_result_naming_another_tool_is_refused() -> None:
    messages = head() + turn_messages([Call("a")])
    messages[-1] = messages[-1].model_copy(update={"name": "write_file"})
    assert refusal(with_messages(messages)).category == "tool results"


def test_user_message_inside_a_tool_batch_is_refused() -> None:
    messages = head() + turn_messages([Call("a"), Call("b")])
    messages.insert(4, Message(role="user", content="hi"))
    assert refusal(with_messages(messages)).category == "tool results"


def test_tool_set_digest_mismatch_is_refused() -> None:
    document = checkpoint_document(VALID)
    document["tools"][0]["description"] += " (edited)"
    assert refused_document(document).category == "tool set changed"


# ------------------------------------------------------------------------------------------------
# Property tests: generated corruptions are all refused cleanly


def _structural_corruptions() -> st.SearchStrategy[tuple[str, Any]]:
    tool_positions = [i for i, m in enumerate(VALID.messages) if m.role == "tool"]
    return st.one_of(
        st.tuples(st.just("drop_result"), st.sampled_from(tool_positions)),
        st.tuples(st.just("duplicate_result"), st.sampled_from(tool_positions)),
        st.tuples(st.just("swap_adjacent"), st.sampled_from(_SWAPPABLE)),
        st.tuples(st.just("wrong_type"), st.sampled_from(_WRONG_TYPES)),
        st.tuples(st.just("huge"), st.sampled_from(_COUNTERS)),
        st.tuples(st.just("negative"), st.sampled_from(_COUNTERS)),
        st.tuples(st.just("nan"), st.sampled_from(["cost_usd", "steps"])),
        st.tuples(st.just("drop_key"), st.sampled_from(_REQUIRED_KEYS)),
        st.tuples(st.just("dangling_call"), st.text(min_size=1, max_size=8)),
        st.tuples(st.just("orphan_result"), st.text(min_size=1, max_size=8)),
    )


_SWAPPABLE = [i for i in range(len(VALID.messages) - 1) if VALID.messages[i] != VALID.messages[i + 1]]
_COUNTERS = ["steps", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd"]
_REQUIRED_KEYS = [
    "task",
    "model",
    "provider",
    "system_prompt",
    "messages",
    "tools",
    "timing",
    "tinyagent_version",
]
_WRONG_TYPES: list[tuple[tuple[Any, ...], Any]] = [
    (("totals", "steps"), "1"),
    (("totals", "steps"), 1.5),
    (("totals", "steps"), [1]),
    (("totals", "cost_usd"), "free"),
    (("totals", "cost_usd"), None),
    (("messages",), {}),
    (("messages", 0), "system"),
    (("messages", 2, "role"), 3),
    (("messages", 2, "tool_calls", 0, "id"), 7),
    (("messages", 3, "tool_call_id"), ["call_1"]),
    (("messages", 3, "is_error"), "no"),
    (("tools", 0, "parameters"), "x"),
    (("exit_status",), 1),
    (("timing",), "now"),
    (("resume", "toolset_sha256"), None),
    (("model",), ["m"]),
    (("limits", "step_limit"), "40"),
]


def _apply(document: dict[str, Any], corruption: tuple[str, Any]) -> dict[str, Any] | None:
    """Corrupt a copy of the document; None when the generated corruption would be a no-op."""
    kind, arg = corruption
    doc = copy.deepcopy(document)
    messages = doc["messages"]
    if kind == "drop_result":
        del messages[arg]
    elif kind == "duplicate_result":
        messages.insert(arg, copy.deepcopy(messages[arg]))
    elif kind == "swap_adjacent":  # whole turns may be reordered validly; a local swap never is
        messages[arg], messages[arg + 1] = messages[arg + 1], messages[arg]
    elif kind == "wrong_type":
        path, value = arg
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    elif kind == "huge":
        doc["totals"][arg] = 10**30 if arg != "cost_usd" else 1e308
    elif kind == "negative":
        doc["totals"][arg] = -1 if arg != "cost_usd" else -0.01
    elif kind == "nan":
        doc["totals"][arg] = float("nan")
    elif kind == "drop_key":
        del doc[arg]
    elif kind == "dangling_call":
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": arg, "name": "bash", "arguments": "{}"}],
            }
        )
        doc["totals"]["steps"] += 1
    elif kind == "orphan_result":
        messages.append({"role": "tool", "content": SECRET, "tool_call_id": arg + "-orphan", "name": "bash"})
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corruption=_structural_corruptions())
def test_structural_corruptions_are_refused_cleanly(corruption: tuple[str, Any]) -> None:
    doc = _apply(checkpoint_document(VALID), corruption)
    if doc is None:
        return
    raw = json.dumps(doc, indent=1, allow_nan=True).encode("utf-8")
    refusal(raw)


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(min_value=0, max_value=len(VALID_BYTES.rstrip()) - 1))
def test_truncated_files_are_refused(cut: int) -> None:
    refusal(VALID_BYTES[:cut])


@settings(max_examples=200, deadline=None)
@given(
    position=st.integers(min_value=0, max_value=len(VALID_BYTES)),
    garbage=st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]),
)
def test_invalid_utf8_anywhere_is_refused(position: int, garbage: bytes) -> None:
    assert refusal(VALID_BYTES[:position] + garbage + VALID_BYTES[position:]).category == "not UTF-8"


def _structural_positions(raw: bytes) -> list[int]:
    """Offsets of JSON punctuation outside string literals."""
    positions: list[int] = []
    in_string = escaped = False
    for index, byte in enumerate(raw):
        char = chr(byte)
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{}[]:,":
            positions.append(index)
    return positions


_STRUCTURAL_BYTES = _structural_positions(VALID_BYTES)


@settings(max_examples=200, deadline=None)
@given(position=st.sampled_from(_STRUCTURAL_BYTES), replacement=st.sampled_from([b"x", b"#", b"'", b";"]))
def test_damaged_structure_is_refused(position: int, replacement: bytes) -> None:
    refusal(VALID_BYTES[:position] + replacement + VALID_BYTES[position + 1 :])


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=2048))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    try:
        trajectory = validate_checkpoint(data)
    except ResumeRefused as refused:
        assert "\n" not in refused.line()
    else:  # pragma: no cover - random bytes are never a valid checkpoint
        assert isinstance(trajectory, Trajectory)


# ------------------------------------------------------------------------------------------------
# Property tests over generated well-formed histories


_turn = st.lists(st.sampled_from(["call_0", "call_1", "call_2", "toolu_x", "fc_9"]), max_size=3, unique=True)


def _history(turns: list[list[str]]) -> list[Message]:
    messages = head()
    for ids in turns:
        if ids:
            messages += turn_messages([Call(i) for i in ids])
        else:  # a reply without tool calls is followed by the harness's nudge
            messages += [Message(role="assistant", content="hm"), Message(role="user", content="call a tool")]
    return messages


@settings(max_examples=150, deadline=None)
@given(turns=st.lists(_turn, max_size=6))
def test_generated_well_formed_histories_are_accepted(turns: list[list[str]]) -> None:
    validate_checkpoint(with_messages(_history(turns)))


@settings(max_examples=150, deadline=None)
@given(turns=st.lists(_turn, min_size=1, max_size=6).filter(lambda t: any(t)), data=st.data())
def test_dropping_or_duplicating_any_result_is_refused(turns: list[list[str]], data: st.DataObject) -> None:
    messages = _history(turns)
    results = [i for i, m in enumerate(messages) if m.role == "tool"]
    target = data.draw(st.sampled_from(results))
    if data.draw(st.booleans()):
        del messages[target]
    else:
        messages.insert(target, messages[target])
    assert refusal(with_messages(messages)).category == "tool results"
