"""Build graymatter stores from a planted corpus, with one simulated day per session.

The timeline is replayed through the public API (``remember_many`` per session, ``revise`` for each
new version of a revision family, so tombstones are made by the real code path), exported, given
session timestamps (session ``s`` is ``sessions - s + 1`` days before now, one second between facts
of a session) and imported into the target directory. Questions are then asked "at the next
session". The flat variant stores every version with ``remember`` (no supersede), as an agent that
never revises would.
"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.planted import PlantedCorpus

AGENT = "project-agent"


def _config() -> Any:
    from graymatter.config import MemoryConfig

    # Background consolidation is off so a benchmark never races a decay/prune cycle.
    return MemoryConfig(async_consolidate=False)


def open_memory(directory: Path, **config: Any) -> Any:
    """Open a keyword-only Memory on ``directory`` with the benchmark config (plus overrides)."""
    from graymatter import Memory

    cfg = _config().model_copy(update=config) if config else _config()
    return Memory(directory, config=cfg, embedder=None)


def build_store(directory: Path, corpus: PlantedCorpus, *, revised: bool) -> None:
    """Create the store in ``directory`` (replaced if present)."""
    from graymatter.models import utcnow

    staging = directory.with_name(directory.name + ".staging")
    for path in (staging, directory):
        shutil.rmtree(path, ignore_errors=True)
    previous: dict[str, str] = {}  # version text -> previous version text of its family
    for family in corpus.families:
        for older, newer in zip(family.versions, family.versions[1:], strict=False):
            previous[newer] = older
    session_of = {text: session for session, text in corpus.timeline}

    memory = open_memory(staging)
    try:
        batch: list[str] = []
        current_session = corpus.timeline[0][0] if corpus.timeline else 0

        def flush() -> None:
            if batch:
                memory.remember_many(AGENT, batch)
                batch.clear()

        for session, text in corpus.timeline:
            if session != current_session:
                flush()
                current_session = session
            if revised and text in previous:
                flush()
                memory.revise(AGENT, previous[text], text)
            else:
                batch.append(text)
        flush()
        bundle = memory.export(AGENT)
    finally:
        memory.close()
    shutil.rmtree(staging, ignore_errors=True)

    now = utcnow()
    order = {text: i for i, (_, text) in enumerate(corpus.timeline)}
    facts = []
    for fact in sorted(bundle.facts, key=lambda f: order[f.text]):
        session = session_of[fact.text]
        moment = (
            now - timedelta(days=corpus.sessions - session + 1) + timedelta(seconds=order[fact.text] % 10_000)
        )
        facts.append(fact.model_copy(update={"created_at": moment, "accessed_at": moment}))
    memory = open_memory(directory)
    try:
        memory.import_bundle(bundle.model_copy(update={"facts": facts}))
    finally:
        memory.close()
