"""A trajectory's canonical on-disk bytes, and an encoder that reuses the JSON of unchanged messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tinyagent.trajectory.models import Trajectory


def dump_trajectory(trajectory: Trajectory) -> bytes:
    """Serialise a trajectory to its canonical on-disk bytes (indented JSON, UTF-8, trailing newline)."""
    return trajectory.model_dump_json(indent=1).encode("utf-8") + b"\n"


class TrajectoryEncoder:
    """`dump_trajectory` for a trajectory saved again and again: byte-identical output, but the JSON of
    every message already encoded (the same object at the same position) is reused.

    A run's history only grows and a message is never mutated once appended, so each checkpoint
    encodes the new messages and the small rest of the document only. Not thread-safe: one
    encoder per run, used by one save at a time.
    """

    def __init__(self) -> None:
        self._messages: list[tuple[object, str]] = []
        self._head: tuple[tuple[object, ...], str] | None = None  # fields before `messages`
        self._tools: tuple[list[object], str] | None = None

    def encode(self, trajectory: Trajectory) -> bytes:
        fields = list(type(trajectory).model_fields)
        at = fields.index("messages") if "messages" in fields else -1
        if not trajectory.messages or at < 1 or fields[at + 1 : at + 2] != ["tools"] or len(fields) < at + 3:
            return dump_trajectory(trajectory)  # an unexpected layout: the plain encoding
        head_fields, tail_fields = fields[:at], fields[at + 2 :]
        head_values = tuple(getattr(trajectory, name) for name in head_fields)
        if self._head is None or not _same_values(self._head[0], head_values):
            self._head = (head_values, _inner(trajectory, head_fields))
        tools: list[object] = list(trajectory.tools)
        if self._tools is None or not _same_values(self._tools[0], tools, identity=True):
            self._tools = (tools, _inner(trajectory, ["tools"]))
        parts = [
            self._head[1],
            self._messages_json(trajectory.messages),
            self._tools[1],
            _inner(trajectory, tail_fields),  # the small, changing fields: encoded every time
        ]
        return ("{\n" + ",\n".join(parts) + "\n}\n").encode("utf-8")

    def _messages_json(self, messages: list[Any]) -> str:
        cache = self._messages
        keep = 0
        limit = min(len(cache), len(messages))
        while keep < limit and cache[keep][0] is messages[keep]:
            keep += 1
        del cache[keep:]
        for message in messages[keep:]:
            text = message.model_dump_json(indent=1)
            cache.append((message, "  " + text.replace("\n", "\n  ")))  # nested two levels deep
        return ' "messages": [\n' + ",\n".join(text for _, text in cache) + "\n ]"


def _inner(trajectory: Trajectory, names: list[str]) -> str:
    """The lines of `names` as they appear inside the indented document (no braces).

    Raw newlines occur in the JSON only as indentation, never inside strings, so cutting the
    object's first and last line is exact.
    """
    text = trajectory.model_dump_json(indent=1, include=set(names))
    return text[2:-2]


def _same_values(old: Sequence[object], new: Sequence[object], *, identity: bool = False) -> bool:
    if len(old) != len(new):
        return False
    if identity:
        return all(a is b for a, b in zip(old, new, strict=True))
    return all(a is b or (type(a) is type(b) and a == b) for a, b in zip(old, new, strict=True))
