"""Provider-neutral checks and id bookkeeping applied to a history before it is serialised.

Every adapter calls `check_pairing` first, so a history with a tool call that has no result, a
result whose call is not in the immediately preceding assistant turn, or a duplicate id within one
turn is refused locally (no request is sent) instead of bricking the session at the provider.
Ids are matched per assistant turn; the same id reused in a later turn is legal.

`WireIds` maps stored tool-call ids to the ids put on the wire: optionally sanitised for providers
with an id pattern (Anthropic) and made unique across the whole request for providers that reject
repeated ids (Anthropic, Responses). The mapping is deterministic and applied identically to a
call and its result.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from tinyagent.providers.base import ProviderRequestError
from tinyagent.types import Message, ToolCall

__all__ = [
    "ANTHROPIC_ID_PATTERN",
    "PairingChecker",
    "WireIds",
    "anthropic_safe_id",
    "arguments_object",
    "check_pairing",
    "distinct_call_ids",
    "system_text",
    "wire_arguments",
]

ANTHROPIC_ID_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")


def check_pairing(messages: Sequence[Message], provider: str) -> None:
    """Refuse a history whose tool calls and results do not pair up within each assistant turn."""
    checker = PairingChecker(provider)
    for index, message in enumerate(messages):
        checker.feed(index, message)
    checker.finish()


class PairingChecker:
    """`check_pairing` one message at a time, with a resumable state (for incremental encoders).

    `state()` after feeding messages[:k] and `PairingChecker(provider, state)` continue exactly
    where that left off; `finish()` checks the end of the history without changing the state.
    """

    def __init__(self, provider: str, state: tuple[tuple[str, ...], int | None] = ((), None)) -> None:
        self._provider = provider
        self._open: list[str] = list(state[0])
        self._turn: int | None = state[1]

    def state(self) -> tuple[tuple[str, ...], int | None]:
        return tuple(self._open), self._turn

    def _fail(self, reason: str) -> ProviderRequestError:
        return ProviderRequestError(f"{self._provider}: conversation history is invalid: {reason}")

    def feed(self, index: int, message: Message) -> None:
        open_ids = self._open
        if message.role == "tool":
            call_id = message.tool_call_id
            if self._turn is None or call_id not in open_ids:
                raise self._fail(
                    f"message {index}: tool result for call {call_id!r} has no matching call in the "
                    "preceding assistant turn"
                )
            open_ids.remove(call_id)
            return
        if open_ids:
            raise self._fail(
                f"message {self._turn}: tool call(s) {', '.join(map(repr, open_ids))} have no result"
            )
        self._turn = None
        if message.role == "assistant" and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            if len(ids) > 1 and len(set(ids)) != len(ids):
                duplicates = sorted({i for i in ids if ids.count(i) > 1})
                raise self._fail(
                    f"message {index}: duplicate tool call id(s) {', '.join(map(repr, duplicates))}"
                )
            if "" in ids:
                raise self._fail(f"message {index}: a tool call has an empty id")
            self._open = ids
            self._turn = index

    def finish(self) -> None:
        if self._open:
            raise self._fail(
                f"message {self._turn}: tool call(s) {', '.join(map(repr, self._open))} have no result"
            )


def anthropic_safe_id(call_id: str) -> str:
    """`call_id` if it matches ^[a-zA-Z0-9_-]+$, else a deterministic sanitised form."""
    if ANTHROPIC_ID_PATTERN.match(call_id):
        return call_id
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:48] or "toolu"
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned}_{digest}"


class WireIds:
    """Stored id -> wire id for every tool call and tool result of a (paired) history."""

    def __init__(
        self,
        messages: Sequence[Message],
        *,
        transform: Callable[[str], str] | None = None,
        unique: bool = False,
    ) -> None:
        self._calls: dict[int, list[str]] = {}
        self._results: dict[int, str] = {}
        used: set[str] = set()
        current: dict[str, str] = {}
        for index, message in enumerate(messages):
            if message.role == "assistant" and message.tool_calls:
                current = {}
                wire_ids = []
                for call in message.tool_calls:
                    wire = transform(call.id) if transform else call.id
                    if unique:
                        wire = _free_id(wire, used)
                    used.add(wire)
                    current[call.id] = wire
                    wire_ids.append(wire)
                self._calls[index] = wire_ids
            elif message.role == "tool" and message.tool_call_id is not None:
                self._results[index] = current.get(message.tool_call_id, message.tool_call_id)

    def calls(self, index: int) -> list[str]:
        """Wire ids of the tool calls of the assistant message at `index`."""
        return self._calls.get(index, [])

    def result(self, index: int) -> str:
        """Wire id of the tool result at `index`."""
        return self._results[index]


def _free_id(call_id: str, taken: set[str]) -> str:
    """`call_id` if it is not taken, else the first free `call_id_2`, `call_id_3`..."""
    if call_id not in taken:
        return call_id
    n = 2
    while f"{call_id}_{n}" in taken:
        n += 1
    return f"{call_id}_{n}"


def system_text(messages: Sequence[Message]) -> str:
    """All system messages joined (providers that take the system prompt out of band)."""
    return "\n\n".join(m.content or "" for m in messages if m.role == "system" and m.content)


def distinct_call_ids(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls of one reply with usable ids: an empty id becomes `call_<position>` and a repeated
    one gets `_2`, `_3`... (some backends repeat ids; the next request would otherwise be refused)."""
    seen: set[str] = set()
    out: list[ToolCall] = []
    for position, call in enumerate(calls):
        call_id = _free_id(call.id or f"call_{position}", seen)
        seen.add(call_id)
        out.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return out


def arguments_object(arguments: str) -> dict[str, Any]:
    """The stored arguments as a JSON object; text that is not one is kept verbatim under
    `invalid_json_arguments` (the model then sees what it sent, and the request stays valid)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"invalid_json_arguments": arguments}
    return value if isinstance(value, dict) else {"invalid_json_arguments": arguments}


def wire_arguments(arguments: str) -> str:
    """Arguments text for wires that carry a JSON string: unchanged (byte-exact, so prompt caches
    keep matching) when it is a JSON object, else the `arguments_object` wrapper. Some servers
    (Ollama, vLLM) parse history arguments and reject a request whose old turn had broken JSON."""
    try:
        if isinstance(json.loads(arguments), dict):
            return arguments
    except ValueError:
        pass
    return json.dumps(arguments_object(arguments))
