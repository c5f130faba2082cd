"""Compaction near the model's context window: older turns summarised into a compacted model view.

The trajectory keeps the full history (`messages`) for audit; `resume.compaction` records the view the model
gets instead: the system prompt, the task message with the running summary appended, then every message
from `compaction.through` on (always an assistant turn, so no tool call is ever separated from its
result). Before each request `Compactor.due` estimates the next prompt (the last request's reported prompt
and output tokens plus about one token per 4 characters appended since); above `COMPACT_AT` of the
window, `compact` asks the same provider for a summary of everything before the last `KEEP_TURNS`
assistant turns (folding in the previous summary). Its usage is accounted like a step's, and counted in
`totals.summary_requests`, not in `steps`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tinyagent.prompts import SUMMARY_HEADER, SUMMARY_INSTRUCTIONS
from tinyagent.providers.base import Provider
from tinyagent.trajectory.models import Compaction, Trajectory
from tinyagent.types import Message, Usage
from tinyagent.windows import COMPACT_AT

__all__ = ["KEEP_TURNS", "Compactor", "compacted_view"]

KEEP_TURNS = 2
"""Assistant turns (with their results) always kept verbatim after the summary."""

MAX_TRANSCRIPT_CHARS = 400_000
MAX_PART_CHARS = 4_000
CHARS_PER_TOKEN = 4


def compacted_view(messages: Sequence[Message], compaction: Compaction | None) -> list[Message]:
    """What the model is sent: the whole history, or system + task-with-summary + the kept turns."""
    if compaction is None:
        return list(messages)
    task = messages[1]
    with_summary = task.model_copy(
        update={"content": f"{task.content}\n\n{SUMMARY_HEADER}\n{compaction.summary}"}
    )
    return [messages[0], with_summary, *messages[compaction.through :]]


class Compactor:
    """Decides when to compact one run, builds the summarising request and caches the model view."""

    def __init__(self, provider: Provider, window: int | None, *, stream: bool) -> None:
        self.provider = provider
        self.window = window
        self.stream = stream
        self._view: tuple[int, Compaction | None, list[Message]] | None = None
        self._measured: tuple[int, int] | None = None  # (prompt + output tokens, view length after reply)

    def view(self, traj: Trajectory) -> list[Message]:
        """The model view of `traj` now (the list is rebuilt only when the history or compaction changed)."""
        compaction = traj.resume.compaction if traj.resume is not None else None
        if compaction is None:
            return traj.messages
        cached = self._view
        if cached is not None and cached[1] is compaction and cached[0] == len(traj.messages):
            return cached[2]
        view = compacted_view(traj.messages, compaction)
        self._view = (len(traj.messages), compaction, view)
        return view

    def measured(self, usage: Usage, view_length: int) -> None:
        """Record the size of the request just answered (its reply is about to be appended)."""
        tokens = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens
        self._measured = (tokens, view_length + 1)

    def estimate(self, traj: Trajectory) -> int:
        """The estimated prompt tokens of the next request."""
        view = self.view(traj)
        if self._measured is not None and self._measured[1] <= len(view):
            tokens, known = self._measured
            return tokens + _chars(view[known:]) // CHARS_PER_TOKEN
        return _chars(view) // CHARS_PER_TOKEN

    def due(self, traj: Trajectory) -> bool:
        """Whether the next prompt crosses the threshold and there are turns old enough to summarise."""
        if self.window is None or traj.resume is None:
            return False
        return self.estimate(traj) > COMPACT_AT * self.window and self._boundary(traj) is not None

    def compact(self, traj: Trajectory) -> Usage:
        """Summarise the older turns with the provider and install the new compaction (raises on failure)."""
        boundary = self._boundary(traj)
        assert boundary is not None and traj.resume is not None
        previous = traj.resume.compaction
        start = previous.through if previous is not None else 2
        request = [
            Message(role="system", content=SUMMARY_INSTRUCTIONS),
            Message(role="user", content=_transcript(traj, previous, traj.messages[start:boundary])),
        ]
        completion = self.provider.complete(request, [], stream=self.stream)
        summary = (completion.message.content or "").strip()
        if not summary:
            raise ValueError("the summary reply was empty")
        compaction = Compaction(
            summary=summary, through=boundary, count=(previous.count + 1 if previous is not None else 1)
        )
        traj.resume = traj.resume.model_copy(update={"compaction": compaction})
        traj.totals.summary_requests += 1
        self._measured = None
        return completion.usage

    @staticmethod
    def _boundary(traj: Trajectory) -> int | None:
        """Index of the oldest kept assistant turn, when at least one turn lies before it to summarise."""
        previous = traj.resume.compaction if traj.resume is not None else None
        start = previous.through if previous is not None else 2
        turns = [i for i in range(start, len(traj.messages)) if traj.messages[i].role == "assistant"]
        if len(turns) <= KEEP_TURNS:
            return None
        return turns[-KEEP_TURNS]


def _chars(messages: Sequence[Message]) -> int:
    total = 0
    for message in messages:
        total += len(message.content or "")
        total += sum(len(call.arguments) + len(call.name) for call in message.tool_calls)
    return total


def _transcript(traj: Trajectory, previous: Compaction | None, messages: Sequence[Message]) -> str:
    """The text the summariser reads: the task, the summary so far and the turns to fold in."""
    parts = [f"TASK:\n{traj.task}"]
    if previous is not None:
        parts.append(f"SUMMARY SO FAR:\n{previous.summary}")
    parts.append("TURNS TO SUMMARISE:")
    for message in messages:
        text = (message.content or "")[:MAX_PART_CHARS]
        if message.role == "tool":
            parts.append(f"[tool result {message.name}{' (error)' if message.is_error else ''}]\n{text}")
            continue
        calls = "".join(f"\n[call {c.name} {c.arguments[:MAX_PART_CHARS]}]" for c in message.tool_calls)
        parts.append(f"[{message.role}]\n{text}{calls}")
    transcript = "\n\n".join(parts)
    return transcript if len(transcript) <= MAX_TRANSCRIPT_CHARS else transcript[-MAX_TRANSCRIPT_CHARS:]
