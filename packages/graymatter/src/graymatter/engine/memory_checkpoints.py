"""The checkpoint part of the ``Memory`` facade: save, latest, get and list (never overwritten)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from graymatter import validation as check
from graymatter.engine.memory_api import ProvenanceArg
from graymatter.engine.memory_core import MemoryCore
from graymatter.errors import InvalidInput, NoCheckpoint
from graymatter.ids import new_ulid
from graymatter.models import Checkpoint, CheckpointJSON, utcnow

T = TypeVar("T")


class CheckpointMethods(MemoryCore):
    """Agent state snapshots: each save is a new checkpoint; the newest one resumes the agent."""

    def checkpoint_save(
        self,
        agent_id: str,
        state: dict[str, Any] | str | None = None,
        *,
        messages: Sequence[Any] | None = None,
        metadata: dict[str, Any] | None = None,
        provenance: ProvenanceArg = None,
    ) -> Checkpoint:
        """Save a new checkpoint (never overwrites). ``state`` must be a JSON object (or a string of one)."""
        agent_id = self._agent(agent_id)
        limit = self.config.max_checkpoint_bytes
        clean_state = {} if state is None else check.json_object(state, "state", limit)
        if messages is not None and (isinstance(messages, str | bytes) or not isinstance(messages, Sequence)):
            raise InvalidInput("messages must be a list")
        message_list = list(messages) if messages is not None else None
        if message_list is not None and len(check.json_bytes(message_list, "messages")) > limit:
            raise InvalidInput(f"messages exceed the limit of {limit} bytes")
        clean_meta = {} if metadata is None else check.json_object(metadata, "metadata", limit)
        checkpoint = Checkpoint(
            id=new_ulid(),
            agent_id=agent_id,
            created_at=utcnow(),
            state=clean_state,
            messages=message_list,
            message_count=len(message_list or []),
            metadata=clean_meta,
            provenance=check.provenance(provenance),
        )
        self.store.save_checkpoint(checkpoint)
        return checkpoint

    def checkpoint_latest(self, agent_id: str) -> Checkpoint:
        """The newest checkpoint; ``NoCheckpoint`` if the agent has none."""
        agent_id = self._agent(agent_id)
        return _found(self.store.latest_checkpoint(agent_id), agent_id)

    def checkpoint_latest_json(self, agent_id: str) -> CheckpointJSON:
        """The newest checkpoint, its state the stored JSON text (not decoded); ``NoCheckpoint`` if none."""
        agent_id = self._agent(agent_id)
        return _found(self.store.latest_checkpoint_json(agent_id), agent_id)

    def checkpoint_get(self, agent_id: str, checkpoint_id: str) -> Checkpoint:
        """One checkpoint of this agent by id; ``NoCheckpoint`` if unknown."""
        agent_id = self._agent(agent_id)
        if not isinstance(checkpoint_id, str) or not checkpoint_id.strip():
            raise InvalidInput("checkpoint id is required")
        checkpoint = self.store.get_checkpoint(checkpoint_id.strip())
        if checkpoint is None or checkpoint.agent_id != agent_id:
            raise NoCheckpoint(f'no checkpoint "{checkpoint_id.strip()[:64]}" for agent "{agent_id}"')
        return checkpoint

    def checkpoint_list(self, agent_id: str, limit: int | None = None) -> list[Checkpoint]:
        """Checkpoints of the agent, newest first."""
        return self.store.list_checkpoints(self._agent(agent_id), limit)


def _found(checkpoint: T | None, agent_id: str) -> T:
    """``checkpoint``, or ``NoCheckpoint`` when the agent has none."""
    if checkpoint is None:
        raise NoCheckpoint(f'no checkpoints for agent "{agent_id}"')
    return checkpoint
