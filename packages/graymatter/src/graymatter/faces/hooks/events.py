"""What each hook event does with an open memory: inject, store a ``remember:`` note, or checkpoint."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from graymatter.faces.hooks.blocks import (
    HOOK_STATE_KEY,
    CheckpointView,
    recall_block,
    remembered_block,
    session_block,
)
from graymatter.faces.hooks.clients import ClientDialect
from graymatter.faces.hooks.payload import HookPayload

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory

SESSION_AGENT_FACTS: Final = 5
SESSION_SHARED_FACTS: Final = 3
PROMPT_AGENT_FACTS: Final = 3
PROMPT_SHARED_FACTS: Final = 3
MAX_QUERY_CHARS: Final = 2000
"""Only the start of a long prompt is used as the recall query."""

_REMEMBER = re.compile(r"^\s*remember(?P<shared>\s+shared)?\s*:\s*(?P<text>\S.*)$", re.IGNORECASE | re.DOTALL)
_LEADING_CONTEXT = re.compile(r"^\s*<hook_context>.*?</hook_context>", re.DOTALL)


def user_text(prompt: str | None) -> str:
    """The prompt without the ``<hook_context>…</hook_context>`` blocks Gemini CLI puts in front of it."""
    text = prompt or ""
    while (match := _LEADING_CONTEXT.match(text)) is not None:
        text = text[match.end() :]
    return text


@dataclass(frozen=True)
class HookRequest:
    """One hook run: the client, the event, its payload and the routed agent."""

    client: ClientDialect
    event: str
    payload: HookPayload
    agent_id: str


@dataclass
class HookOutcome:
    """What a hook did: the text for the model (maybe empty), a notice for the user, a log summary."""

    outcome: str
    context: str = ""
    notice: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def remember_request(prompt: str | None) -> tuple[str, bool] | None:
    """``(text, shared)`` when the prompt starts with ``remember:`` or ``remember shared:``, else None."""
    match = _REMEMBER.match(user_text(prompt))
    if match is None or not match.group("text").strip():
        return None
    return match.group("text").strip(), match.group("shared") is not None


def _provenance(request: HookRequest) -> dict[str, str]:
    return {"interface": "cli", "client": f"{request.client.name} hook"}


def _latest_view(memory: Memory, agent_id: str) -> CheckpointView | None:
    from graymatter.errors import NoCheckpoint

    try:
        checkpoint = memory.checkpoint_latest(agent_id)
    except NoCheckpoint:
        return None
    stamp = checkpoint.created_at.isoformat(timespec="seconds")
    return CheckpointView(checkpoint.id, stamp, dict(checkpoint.state))


def session_start(memory: Memory, request: HookRequest) -> HookOutcome:
    """The last checkpoint and the top agent and shared facts."""
    agent = request.agent_id
    checkpoint = _latest_view(memory, agent)
    facts = [hit.text for hit in memory.recall(agent, "", SESSION_AGENT_FACTS, scope="agent")]
    shared = [hit.text for hit in memory.recall_shared("", SESSION_SHARED_FACTS)]
    block = session_block(agent, checkpoint, facts, shared)
    details = {"facts": len(facts), "shared": len(shared), "checkpoint": checkpoint is not None}
    return HookOutcome("injected" if block else "nothing", block, details=details)


def user_prompt(memory: Memory, request: HookRequest) -> HookOutcome:
    """Store a ``remember:`` note at once, else recall facts for the prompt."""
    agent, prompt = request.agent_id, user_text(request.payload.prompt)
    note = remember_request(prompt)
    if note is not None:
        text, to_shared = note
        target = "__shared__" if to_shared else agent
        fact = memory.remember(target, text, provenance=_provenance(request))
        where = "shared memory" if to_shared else f"agent {agent}"
        notice = f"graymatter: remembered in {where} ({fact.id})"
        details = {"fact_id": fact.id, "shared": to_shared}
        return HookOutcome("remembered", remembered_block(agent, text, to_shared), notice, details)
    if not prompt.strip():
        return HookOutcome("nothing", details={"prompt": "absent"})
    query = prompt[:MAX_QUERY_CHARS]
    facts = [hit.text for hit in memory.recall(agent, query, PROMPT_AGENT_FACTS, scope="agent")]
    shared = [hit.text for hit in memory.recall_shared(query, PROMPT_SHARED_FACTS)]
    block = recall_block(agent, facts, shared)
    return HookOutcome(
        "injected" if block else "nothing", block, details={"facts": len(facts), "shared": len(shared)}
    )


def save_checkpoint(memory: Memory, request: HookRequest) -> HookOutcome:
    """A new checkpoint that carries the newest one's state and messages forward, plus the hook's note.

    No model is asked to summarise anything and the transcript is not read: the checkpoint records which
    event saved it, for which session, so ``checkpoint_resume`` keeps answering with the agent's state.
    An agent without a checkpoint gets none (a note alone would answer ``checkpoint_resume`` with nothing
    to resume instead of "no checkpoint yet").
    """
    from graymatter.errors import NoCheckpoint

    agent, payload = request.agent_id, request.payload
    try:
        previous = memory.checkpoint_latest(agent)
    except NoCheckpoint:
        return HookOutcome("nothing", details={"checkpoint": "none to carry"})
    note = {"event": request.event, "client": request.client.name}
    for name in ("session_id", "trigger", "reason", "source"):
        value = getattr(payload, name)
        if value is not None:
            note[name] = value
    state = {**previous.state, HOOK_STATE_KEY: note}
    metadata = {"source": "hook", "client": request.client.name, "event": request.event}
    metadata["carried_from"] = previous.id
    checkpoint = memory.checkpoint_save(
        agent, state, messages=previous.messages, metadata=metadata, provenance=_provenance(request)
    )
    return HookOutcome("checkpoint", details={"checkpoint_id": checkpoint.id})


HANDLERS: Final = {
    "session-start": session_start,
    "user-prompt": user_prompt,
    "pre-compact": save_checkpoint,
    "session-end": save_checkpoint,
}
"""The handler of each event."""


def writes(event: str, payload: HookPayload) -> bool:
    """True when the event stores something in a store that may not exist yet: a ``remember:`` note (a
    checkpoint is saved only over an existing one, so never into a new store)."""
    return event == "user-prompt" and remember_request(payload.prompt) is not None
