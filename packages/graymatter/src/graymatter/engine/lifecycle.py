"""Decay, pruning and consolidation of one namespace.

* Decay is idempotent: ``weight = min(weight, exp(-λ·hours since last access))`` with
  ``λ = ln 2 / half-life`` and whole hours; running it twice changes nothing the second time.
* Decay is incremental: a cycle visits only the facts that are due (``Store.decay_due``: never visited
  and idle for an hour, or past their ``decay_due_at``), at most ``DECAY_BATCH`` of them, and schedules
  each one's next visit for when its weight will have fallen by ``DECAY_STEP`` or below the prune floor,
  whichever is first. A cycle's cost is bounded by what is due, not by the size of the agent
  (docs/decisions/0011-trustworthy-recall.md).
* Pruning hard-deletes unpinned facts below the floor (0.01 ≈ 199 days without access). It is the only
  deletion path. Pinned facts and aliases are exempt from decay and pruning.
* Summarisation (only with a configured LLM provider) is propose-then-apply: the model proposes a summary
  of the weakest half of the live unpinned facts; applying it is deterministic: the summary is written
  first, then the consumed facts are tombstoned with ``superseded_by`` = the summary id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from graymatter.config import MemoryConfig
from graymatter.constants import CONFIDENCE_LEVELS
from graymatter.errors import GraymatterError
from graymatter.ids import new_ulid
from graymatter.models import ConsolidationReport, Fact, Provenance, utcnow
from graymatter.store.base import Store


class Summariser(Protocol):
    """Proposes one summary text for a list of facts."""

    name: str

    def summarise(self, texts: Sequence[str], max_bytes: int) -> str: ...


def decayed_weight(fact: Fact, now: datetime, half_life_hours: float) -> float:
    """The fact's weight after decay at ``now`` (never higher than its current weight).

    Staleness counts whole hours since the last access: a fact used within the hour keeps its weight, so
    consolidation cycles right after writes do not rewrite every fresh fact with 0.99999….
    """
    hours = math.floor(max(0.0, (now - fact.accessed_at).total_seconds()) / 3600.0)
    return min(fact.weight, math.exp(-math.log(2) / half_life_hours * hours))


DECAY_BATCH = 5000
"""The most facts one consolidation cycle visits for decay; the rest stay due for the next cycle."""
DECAY_STEP = 0.1
"""A visited fact is next visited when its weight will have fallen by this fraction (or below the floor)."""


def next_decay_at(fact: Fact, weight: float, now: datetime, half_life_hours: float, floor: float) -> datetime:
    """When ``fact`` (now at ``weight``) is next due: the first whole hour since its last access at which
    its decayed weight is at most ``weight × (1 - DECAY_STEP)``, or below ``floor`` if that comes first."""
    rate = math.log(2) / half_life_hours
    step_target = weight * (1.0 - DECAY_STEP)
    hours = math.ceil(math.log(1.0 / step_target) / rate) if step_target > floor else None
    below_floor = math.floor(math.log(1.0 / floor) / rate) + 1  # first whole hour with exp(-λh) < floor
    due = fact.accessed_at + timedelta(hours=below_floor if hours is None else min(hours, below_floor))
    return max(due, now + timedelta(hours=1))


def decay_updates(facts: Sequence[Fact], now: datetime, half_life_hours: float) -> dict[str, float]:
    """New weights for every unpinned, non-alias fact whose weight decays at ``now``."""
    updates = {}
    for fact in facts:
        if fact.pinned or fact.kind != "fact":
            continue
        weight = decayed_weight(fact, now, half_life_hours)
        if weight < fact.weight:
            updates[fact.id] = weight
    return updates


@dataclass(frozen=True)
class SummaryProposal:
    """A summary proposed by a model for a set of facts, not yet applied."""

    agent_id: str
    text: str
    consumed_ids: list[str]


def summary_candidates(facts: Sequence[Fact], threshold: int, batch: int) -> list[Fact]:
    """The weakest half of the live, unpinned facts (weight asc, oldest first), when above the threshold."""
    live = [f for f in facts if f.live and not f.pinned and f.kind == "fact"]
    if len(live) <= threshold:
        return []
    live.sort(key=lambda f: (f.weight, f.created_at, f.id))
    return live[: min(len(live) // 2, batch)]


def propose_summary(
    summariser: Summariser, agent_id: str, facts: Sequence[Fact], max_bytes: int
) -> SummaryProposal:
    """Ask the model for a summary (raises ``ProviderError`` on failure or an unusable answer)."""
    text = summariser.summarise([f.text for f in facts], max_bytes)
    return SummaryProposal(agent_id, text, [f.id for f in facts])


def apply_summary(
    store: Store, proposal: SummaryProposal, summariser_name: str, now: datetime
) -> tuple[Fact, list[str]] | None:
    """Write the summary, then tombstone the consumed facts that are still live and unpinned.

    Facts revised, forgotten or pinned since the proposal are left alone; if none remain, nothing is
    written and ``None`` is returned. The summary's confidence is the lowest of the consumed labels.
    """
    current = [f for f in store.get_facts(proposal.consumed_ids) if f.live and not f.pinned]
    if not current:
        return None
    confidence = min((f.confidence for f in current), key=lambda c: CONFIDENCE_LEVELS[c])
    summary = Fact(
        id=new_ulid(),
        agent_id=proposal.agent_id,
        text=proposal.text,
        created_at=now,
        accessed_at=now,
        confidence=confidence,
        provenance=Provenance(interface="consolidation", client=summariser_name),
    )
    store.add_facts([summary])
    consumed = store.supersede([f.id for f in current], summary.id)
    return summary, consumed


def consolidate(
    store: Store,
    agent_id: str,
    config: MemoryConfig,
    summariser: Summariser | None = None,
    now: datetime | None = None,
) -> ConsolidationReport:
    """One cycle: decay, optional summarisation, prune. Safe to run concurrently with other writers."""
    now = now or utcnow()
    due = store.decay_due(agent_id, now, now - timedelta(hours=1), DECAY_BATCH)
    updates = decay_updates(due, now, config.half_life_hours)
    due = [f.model_copy(update={"weight": updates[f.id]}) if f.id in updates else f for f in due]
    store.record_decay(
        {
            f.id: (f.weight, next_decay_at(f, f.weight, now, config.half_life_hours, config.prune_floor))
            for f in due
            if f.weight >= config.prune_floor
        }
    )
    decayed = len(updates)

    summary_id: str | None = None
    consumed: list[str] = []
    summariser_error: str | None = None
    if summariser is not None:  # opt-in: reads the whole agent to choose the weakest half
        facts = store.list_facts(agent_id, include_superseded=True)
        batch = summary_candidates(facts, config.consolidate_threshold, config.summarise_batch)
        if len(batch) >= 2:
            try:
                proposal = propose_summary(summariser, agent_id, batch, config.max_text_bytes)
            except GraymatterError as exc:
                summariser_error = str(exc)
            else:
                applied = apply_summary(store, proposal, summariser.name, now)
                if applied is not None:
                    summary_id, consumed = applied[0].id, applied[1]

    doomed = [f.id for f in due if f.weight < config.prune_floor and f.id not in consumed]
    pruned = store.delete_facts(doomed) if doomed else []
    # every field made here, of its exact type: built as validation would build it, without building the
    # model's schema (a background cycle's report is usually dropped unread; tested equal to a validated one)
    return ConsolidationReport.model_construct(
        agent_id=agent_id,
        decayed=decayed,
        pruned=pruned,
        summary_fact_id=summary_id,
        consumed_ids=consumed,
        summariser=summariser.name if summariser else None,
        summariser_error=summariser_error,
    )
