"""The history rules of a resumable checkpoint: conversation structure and tool-call/result pairing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tinyagent.resume.refusal import refuse
from tinyagent.types import Message


@dataclass
class _ToolBatch:
    """The tool calls of the current assistant turn: which are still unanswered and which were answered."""

    turn_index: int = -1
    pending: list[tuple[str, str]] = field(default_factory=list)  # unanswered (id, name), in call order
    ids: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)


def check_history(
    messages: Sequence[Message], *, system_prompt: str, task: str, pending_tail: bool = False
) -> list[tuple[str, str]]:
    """Refuse a history that is not a well-formed conversation ending at a model-query boundary.

    Rules: the first message is the system prompt, the second the task as a user message; system
    messages appear nowhere else; each assistant turn's tool calls have non-empty ids, unique within
    that turn, and are answered by exactly one tool result each, in call order, immediately after the
    turn (ids may repeat across different turns); a tool result outside such a batch is orphaned; a
    user message only appears at a turn boundary; the history ends at a boundary, never inside a
    tool batch. With `pending_tail` (the file was saved after a reply, before its tools ran) the last
    turn may lack results: its unanswered (id, name) calls are returned instead of refused.
    """
    _check_opening(messages, system_prompt, task)
    batch = _ToolBatch()
    for index, message in enumerate(messages[2:], start=2):
        _check_message(message, index, batch)
    if batch.pending and pending_tail:
        return list(batch.pending)
    if batch.pending:
        refuse(
            "tool results",
            f"the last assistant turn (message {batch.turn_index}) has {len(batch.pending)} tool call(s) "
            "without a result; the run stopped inside a tool batch and its effects are unrecorded, "
            "start a fresh task after inspecting the workspace",
        )
    return []


def unanswered_tail(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """The (id, name) of the last assistant turn's calls that have no result after it (call order)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return [(call.id, call.name) for call in message.tool_calls if call.id not in answered]
        if message.role != "tool":
            return []
    return []


def _check_opening(messages: Sequence[Message], system_prompt: str, task: str) -> None:
    if len(messages) < 2:
        refuse("history", "the checkpoint has no system prompt and task messages; it is not resumable")
    first, second = messages[0], messages[1]
    if first.role != "system" or first.content != system_prompt:
        refuse("history", "message 0 is not the recorded system prompt; the file is inconsistent")
    if second.role != "user" or second.content != task:
        refuse("history", "message 1 is not the recorded task; the file is inconsistent")


def _check_message(message: Message, index: int, batch: _ToolBatch) -> None:
    if message.role == "system":
        refuse("history", f"message {index} is a system message after the start; unsupported structure")
    if message.role != "tool" and message.tool_call_id is not None:
        refuse("history", f"message {index} ({message.role}) carries a tool_call_id; unsupported")
    if message.role == "tool":
        _check_tool_result(message, index, batch)
        batch.pending.pop(0)
        return
    if batch.pending:
        refuse(
            "tool results",
            f"the assistant turn at message {batch.turn_index} has {len(batch.pending)} tool call(s) "
            f"without a result before message {index}; the file was edited or damaged, resume from an "
            "intact trajectory",
        )
    if message.role == "user":
        if message.tool_calls or message.content is None:
            refuse("history", f"message {index} is a user message without text or with tool calls")
        batch.ids = set()
        batch.answered = set()
        return
    _open_turn(message, index, batch)


def _open_turn(message: Message, index: int, batch: _ToolBatch) -> None:
    """Start the tool batch of the assistant turn at `index`."""
    batch.turn_index = index
    batch.ids = set()
    batch.answered = set()
    batch.pending = []
    for call in message.tool_calls:
        if not call.id:
            refuse("tool results", f"a tool call in message {index} has an empty id")
        if not call.name:
            refuse("history", f"a tool call in message {index} has an empty tool name")
        if call.id in batch.ids:
            refuse(
                "tool results",
                f"two tool calls in message {index} share one id; their results cannot be matched",
            )
        batch.ids.add(call.id)
        batch.pending.append((call.id, call.name))


def _check_tool_result(message: Message, index: int, batch: _ToolBatch) -> None:
    call_id = message.tool_call_id
    if message.content is None:
        refuse("history", f"tool result at message {index} has no content")
    if message.tool_calls:
        refuse("history", f"tool result at message {index} carries tool calls")
    if not call_id:
        refuse("tool results", f"tool result at message {index} has no tool_call_id")
    if call_id in batch.answered:
        refuse(
            "tool results",
            f"tool result at message {index} duplicates an earlier result of the same assistant turn",
        )
    if call_id not in batch.ids or not batch.pending:
        refuse(
            "tool results",
            f"tool result at message {index} is orphaned: no tool call with its id in the assistant turn "
            "it follows",
        )
    expected_id, expected_name = batch.pending[0]
    if call_id != expected_id:
        refuse(
            "tool results",
            f"tool results of the assistant turn at message {batch.turn_index} are out of call order "
            f"(message {index}); the file was edited or damaged",
        )
    if message.name is not None and message.name != expected_name:
        refuse("tool results", f"tool result at message {index} names a different tool than its call")
    batch.answered.add(call_id)
