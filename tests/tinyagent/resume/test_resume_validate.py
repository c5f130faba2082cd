"""In-process tests of `tinyagent.resume.validate.validate_checkpoint`: accepted shapes (multiple calls
per turn, ids repeated across turns), every file-level refusal category and the counter checks
(history pairing and generated corruptions: test_resume_history.py)."""

from __future__ import annotations

from typing import Any

import pytest

from support.resume_checkpoints import SECRET, Call, checkpoint_bytes, checkpoint_document, make_checkpoint
from support.resume_refusals import encode, refusal, refused_document
from tinyagent.resume.read import MAX_CHECKPOINT_BYTES
from tinyagent.resume.validate import validate_checkpoint
from tinyagent.trajectory.models import ExitStatus
from tinyagent.types import Message

VALID = make_checkpoint()
VALID_BYTES = checkpoint_bytes(VALID)


# ------------------------------------------------------------------------------------------------
# Accepted shapes


def test_valid_checkpoint_round_trips_exactly() -> None:
    trajectory = validate_checkpoint(VALID_BYTES)
    assert trajectory == VALID


def test_multiple_calls_per_turn_and_repeated_ids_across_turns_are_accepted() -> None:
    turns = [
        [Call("call_0"), Call("call_1", name="read_file", arguments={"path": "a"})],
        [
            Call("call_0"),
            Call("call_1"),
            Call("call_2", name="write_file", arguments={"path": "b", "content": ""}),
        ],
        [Call("call_0")],
    ]
    trajectory = validate_checkpoint(checkpoint_bytes(make_checkpoint(turns)))
    tool_ids = [m.tool_call_id for m in trajectory.messages if m.role == "tool"]
    assert tool_ids == ["call_0", "call_1", "call_0", "call_1", "call_2", "call_0"]


@pytest.mark.parametrize(
    "status",
    [s for s in ExitStatus if s is not ExitStatus.SUBMITTED],
)
def test_every_unfinished_status_is_eligible(status: ExitStatus) -> None:
    assert validate_checkpoint(checkpoint_bytes(make_checkpoint(status=status))).exit_status is status


def test_checkpoint_stopped_before_the_first_reply_is_eligible() -> None:
    trajectory = make_checkpoint(turns=(), status=ExitStatus.PROVIDER_ERROR)
    assert validate_checkpoint(checkpoint_bytes(trajectory)).messages[-1].role == "user"


def test_text_only_turn_followed_by_a_user_nudge_is_a_boundary() -> None:
    trajectory = make_checkpoint()
    trajectory.messages.append(Message(role="assistant", content="thinking"))
    trajectory.messages.append(Message(role="user", content="please call a tool"))
    trajectory.totals.steps += 1
    validate_checkpoint(checkpoint_bytes(trajectory))


def test_more_steps_than_assistant_messages_is_consistent() -> None:
    validate_checkpoint(checkpoint_bytes(make_checkpoint(extra_steps=3)))


# ------------------------------------------------------------------------------------------------
# File-level refusal categories


def test_empty_file_is_refused() -> None:
    assert refusal(b"").category == "empty file"


def test_oversized_content_is_refused() -> None:
    assert refusal(b" " * (MAX_CHECKPOINT_BYTES + 1)).category == "oversized file"


def test_non_utf8_is_refused() -> None:
    assert refusal(VALID_BYTES[:40] + b"\xff" + VALID_BYTES[40:]).category == "not UTF-8"


@pytest.mark.parametrize(
    "raw",
    [b"{", b"not json", VALID_BYTES[:-10], b'{"a": 1}{', b'{"a": NaN}', b'{"a": Infinity}', b'{"a":1,"a":2}'],
)
def test_malformed_json_is_refused(raw: bytes) -> None:
    assert refusal(raw).category == "malformed JSON"


def test_unpaired_surrogate_escape_is_refused_as_malformed() -> None:
    raw = VALID_BYTES.replace(b"output SECRET", b"output \\ud800 SECRET", 1)
    assert raw != VALID_BYTES
    assert refusal(raw).category == "malformed JSON"


def test_absurdly_long_number_is_refused() -> None:
    raw = VALID_BYTES.replace(b'"steps": 2', b'"steps": ' + b"9" * 5000, 1)
    assert raw != VALID_BYTES
    refused = refusal(raw)
    assert refused.category == "malformed JSON" and "number" in refused.advice


def test_deeply_nested_json_is_refused_without_a_traceback() -> None:
    assert refusal(b"[" * 100_000 + b"]" * 100_000).category == "malformed JSON"


@pytest.mark.parametrize("document", [[], "x", 1, None, {"format": "mini-swe-agent-1.1"}, {}])
def test_not_a_trajectory_is_refused(document: Any) -> None:
    assert refused_document(document).category == "unsupported format"


@pytest.mark.parametrize("version", [None, "1", 0, 2, 1.0])
def test_unsupported_or_missing_format_version_is_refused(version: Any) -> None:
    document = checkpoint_document(VALID)
    if version is None:
        del document["format_version"]
    else:
        document["format_version"] = version
    assert refused_document(document).category == "unsupported format version"


@pytest.mark.parametrize("how", ["absent", "null"])
def test_missing_resume_metadata_is_refused(how: str) -> None:
    document = checkpoint_document(VALID)
    if how == "absent":
        del document["resume"]
    else:
        document["resume"] = None
    refused = refused_document(document)
    assert refused.category == "missing resume metadata"
    assert "log" in refused.advice


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_unsupported_resume_version_is_refused(version: Any) -> None:
    document = checkpoint_document(VALID)
    if version is None:
        del document["resume"]["version"]
    else:
        document["resume"]["version"] = version
    assert refused_document(document).category == "unsupported resume version"


@pytest.mark.parametrize(
    "state", [{}, {"summary": "x"}, [], "compacted", 0, {"summary": "x", "through": 4, "v": 1}]
)
def test_a_malformed_compaction_state_is_schema_invalid(state: Any) -> None:
    document = checkpoint_document(VALID)
    document["resume"]["compaction"] = state
    assert refused_document(document).category == "schema-invalid"


@pytest.mark.parametrize(
    "state",
    [
        {"summary": "x", "through": 3},  # a tool result: the view would split a call from its result
        {"summary": "x", "through": 2},  # nothing summarised
        {"summary": "x", "through": 99},
        {"summary": " ", "through": 4},
        {"summary": "x", "through": 4, "count": 0},
    ],
)
def test_a_compacted_view_that_cannot_be_restored_is_refused(state: Any) -> None:
    document = checkpoint_document(VALID)
    document["resume"]["compaction"] = state
    assert refused_document(document).category == "compaction"


def test_a_compacted_view_at_an_assistant_turn_is_accepted() -> None:
    document = checkpoint_document(VALID)
    document["resume"]["compaction"] = {"summary": "earlier turns", "through": 4}
    trajectory = validate_checkpoint(encode(document))
    assert trajectory.resume is not None and trajectory.resume.compaction is not None
    assert trajectory.resume.compaction.through == 4


def test_schema_invalid_names_the_field_but_not_foreign_keys() -> None:
    document = checkpoint_document(VALID)
    document["messages"][1][SECRET] = "x"
    refused = refused_document(document)
    assert refused.category == "schema-invalid"
    assert "messages.1.<unknown field>" in refused.advice


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("totals", "steps"), "3"),
        (("totals", "cost_usd"), "0.1"),
        (("messages", 2, "role"), "developer"),
        (("messages", 2, "tool_calls"), {}),
        (("exit_status",), "Completed"),
        (("task",), None),
        (("resume", "cwd"), 5),
        (("resume", "agents_md"), "always"),
        (("messages",), None),
    ],
)
def test_schema_invalid_values_are_refused(path: tuple[Any, ...], value: Any) -> None:
    document = checkpoint_document(VALID)
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert refused_document(document).category == "schema-invalid"


def test_terminal_success_is_refused() -> None:
    trajectory = make_checkpoint(status=ExitStatus.SUBMITTED)
    trajectory.submission = f"done {SECRET}"
    refused = refusal(checkpoint_bytes(trajectory))
    assert refused.category == "finished run"


def test_submission_without_submitted_status_is_refused() -> None:
    trajectory = make_checkpoint()
    trajectory.submission = "done"
    assert refusal(checkpoint_bytes(trajectory)).category == "invalid counters"


# ------------------------------------------------------------------------------------------------
# Counters


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("steps", -1),
        ("input_tokens", -5),
        ("cache_read_tokens", 2**60),
        ("output_tokens", 10**30),
        ("cost_usd", -0.5),
        ("cost_usd", 1e300),
    ],
)
def test_out_of_range_totals_are_refused(field: str, value: Any) -> None:
    document = checkpoint_document(VALID)
    document["totals"][field] = value
    assert refused_document(document).category == "invalid counters"


def test_non_finite_cost_is_refused() -> None:
    raw = VALID_BYTES.replace(b'"cost_usd": 0.002', b'"cost_usd": 1e999')
    assert raw != VALID_BYTES
    assert refusal(raw).category == "invalid counters"


def test_fewer_steps_than_assistant_messages_is_refused() -> None:
    document = checkpoint_document(VALID)
    document["totals"]["steps"] = 1
    refused = refused_document(document)
    assert refused.category == "invalid counters"
    assert "steps" in refused.advice


def test_tokens_without_steps_are_refused() -> None:
    trajectory = make_checkpoint(turns=())
    trajectory.totals.input_tokens = 5
    assert refusal(checkpoint_bytes(trajectory)).category == "invalid counters"


@pytest.mark.parametrize(
    ("field", "value"), [("step_limit", -1), ("time_limit", -2.0), ("cost_limit", 1e999)]
)
def test_invalid_limits_are_refused(field: str, value: Any) -> None:
    document = checkpoint_document(VALID)
    document["limits"][field] = value
    assert refusal(encode(document).replace(b"Infinity", b"1e999")).category == "invalid counters"


def test_provenance_beyond_the_history_is_refused() -> None:
    document = checkpoint_document(VALID)
    document["resumed_from"] = [
        {
            "source_path": "/tmp/a.json",
            "source_sha256": "0" * 64,
            "previous_status": "StepLimit",
            "boundary_messages": 999,
            "boundary_steps": 1,
            "resumed_at": "2026-11-30T00:00:00Z",
        }
    ]
    assert refused_document(document).category == "invalid counters"
