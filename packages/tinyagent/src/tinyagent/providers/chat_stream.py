"""One streamed Chat Completions reply merged chunk by chunk: text, reasoning, tool-call fragments, usage."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tinyagent.providers.base import OnText
from tinyagent.providers.fields import index_field, mapping, sequence, text_field
from tinyagent.providers.http.retry import StreamProgress

__all__ = ["ChatStream"]


class ChatStream:
    """What the chunks of one stream said so far; text deltas go to `on_text` as they arrive."""

    def __init__(self, progress: StreamProgress, on_text: OnText) -> None:
        self._progress = progress
        self._on_text = on_text
        self.text: list[str] = []
        self.reasoning: dict[str, str] = {}
        self.details: dict[int, dict[str, Any]] = {}
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: Any = None
        self.response_id: str | None = None
        self.model = ""

    def add(self, chunk: Mapping[str, Any]) -> None:
        """Merge one chunk: its id, model and usage, then the delta of choice 0."""
        self.response_id = self.response_id or text_field(chunk.get("id"))
        self.model = text_field(chunk.get("model")) or self.model
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        for choice in sequence(chunk.get("choices")):
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = mapping(choice.get("delta"))
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                if self._on_text is not None:
                    self._progress.handed_out = True
                    self._on_text(piece)
            for key in ("reasoning", "reasoning_content"):
                if isinstance(delta.get(key), str):
                    self.reasoning[key] = self.reasoning.get(key, "") + delta[key]
            for position, detail in enumerate(sequence(delta.get("reasoning_details"))):
                if isinstance(detail, Mapping):
                    slot = index_field(detail.get("index"), position)
                    _merge_fragment(self.details.setdefault(slot, {}), detail)
            for position, fragment in enumerate(sequence(delta.get("tool_calls"))):
                if isinstance(fragment, Mapping):
                    self._add_call_fragment(position, fragment)
            self.finish = text_field(choice.get("finish_reason")) or self.finish

    def _add_call_fragment(self, position: int, fragment: Mapping[str, Any]) -> None:
        """Tool-call pieces merge by `index` (Ollama sends each call whole, OpenAI in pieces)."""
        entry = self.calls.setdefault(
            index_field(fragment.get("index"), position), {"id": None, "name": None, "args": []}
        )
        entry["id"] = text_field(fragment.get("id")) or entry["id"]
        fn = mapping(fragment.get("function"))
        entry["name"] = text_field(fn.get("name")) or entry["name"]
        arguments = fn.get("arguments")
        if isinstance(arguments, Mapping):
            entry["args"].append(json.dumps(arguments))
        elif isinstance(arguments, str):
            entry["args"].append(arguments)

    def call_parts(self) -> list[tuple[Any, Any, str]]:
        """(id, name, arguments text) of every tool call, in index order."""
        return [
            (entry["id"], entry["name"], "".join(entry["args"])) for _, entry in sorted(self.calls.items())
        ]

    def reasoning_state(self) -> dict[str, Any]:
        """The non-empty reasoning text fields and the merged reasoning details, in index order."""
        state: dict[str, Any] = {k: v for k, v in self.reasoning.items() if v}
        if self.details:
            state["reasoning_details"] = [self.details[k] for k in sorted(self.details)]
        return state


def _merge_fragment(target: dict[str, Any], fragment: Mapping[str, Any]) -> None:
    for key, value in fragment.items():
        if (
            isinstance(value, str)
            and isinstance(target.get(key), str)
            and key not in ("type", "id", "format")
        ):
            target[key] += value
        else:
            target[key] = value
