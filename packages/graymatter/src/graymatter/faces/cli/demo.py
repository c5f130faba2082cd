"""``graymatter demo``: a guided, offline tour on a temporary embedded store (what ``make demo`` runs)."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory
    from graymatter.models import ExportBundle

AGENT = "support-bot"
HISTORY = [  # (days ago, fact): what the agent learnt over the past weeks, loaded as an import
    (41, "The production database is PostgreSQL 16 running in eu-west-1"),
    (35, "Deploys happen every Tuesday and Thursday after 14:00 UTC"),
    (29, "Customer Acme Corp is on the Enterprise plan with a 99.95% SLA"),
    (23, "The on-call rotation changes every Monday at 09:00 UTC"),
    (18, "Refunds above 500 EUR need approval from the finance team"),
    (12, "The staging cluster is called kestrel and mirrors production weekly"),
    (7, "Alice owns the billing service; Bob owns the search service"),
    (3, "Error budget alerts go to the #sre-alerts Slack channel"),
]
SEED = [  # remembered live during the demo
    "The API rate limit is 600 requests per minute per token",
    "Acme Corp prefers email over phone for incident updates",
]
SHARED_SEED = [
    "Company-wide: never share customer data in public channels",
    "Company-wide: the incident commander decides on customer communication",
]


_out = sys.stdout


def _write(text: str) -> None:
    _out.write(text)


def _section(title: str) -> None:
    _write(f"\n== {title} ==\n")


def _explain(memory: Memory, query: str, **options: Any) -> None:
    _write(f'\nrecall "{query}"\n')
    for i, hit in enumerate(memory.recall_explain(AGENT, query, 3, **options), 1):
        r = hit.ranks
        keyword = str(r.keyword_rank or "-")
        if hit.keyword_source == "context":
            keyword += " (context: written next to a matching fact)"
        elif hit.keyword_source == "phrase":
            keyword += " (phrase)"
        ranks = f"keyword {keyword}, vector {r.vector_rank or '-'}, recency {r.recency_rank or '-'}"
        weights = hit.weights
        recomputed = sum(
            w / (r.k + rank)
            for w, rank in (
                (weights.keyword, r.keyword_rank),
                (weights.vector, r.vector_rank),
                (weights.recency, r.recency_rank),
            )
            if rank
        )
        _write(f"  {i}. {hit.text}\n")
        _write(
            f"     ranks: {ranks} | fused {r.fused_score:.5f} (recomputed {recomputed:.5f}) | "
            f"score {hit.score:.5f}\n"
        )


def _history() -> ExportBundle:
    """An export bundle holding ``HISTORY`` with its real ages (ids and timestamps from those days)."""
    from datetime import timedelta

    from graymatter.ids import new_ulid
    from graymatter.models import ExportBundle, Fact, Provenance, utcnow

    now = utcnow()
    facts = []
    for days, text in HISTORY:
        at = now - timedelta(days=days)
        facts.append(
            Fact(
                id=new_ulid(int(at.timestamp() * 1000)),
                agent_id=AGENT,
                text=text,
                created_at=at,
                accessed_at=at,
                provenance=Provenance(interface="import", client="demo"),
            )
        )
    return ExportBundle(exported_at=now, facts=facts, checkpoints=[], links=[])


def run_demo(keep: str | None = None, json_output: bool = False) -> int:
    """Seed a store (imported history + live writes), recall with explanations, revise, round-trip a
    checkpoint. Returns an exit code."""
    from graymatter.config import MemoryConfig
    from graymatter.engine.memory import Memory

    global _out
    _out = sys.stderr if json_output else sys.stdout  # with --json, stdout carries only the JSON summary
    started = time.perf_counter()
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="graymatter-demo-"))
    summary: dict[str, Any] = {"store": str(root)}
    try:
        with Memory(root, embedder=None, config=MemoryConfig(embedding="keyword")) as memory:
            _seed(memory, root)
            _recall_tour(memory)
            summary.update(_checkpoint_tour(memory))
        elapsed = time.perf_counter() - started
        _section(f"done in {elapsed:.2f} s")
        if keep:
            _write(f"store kept at {root}; try: graymatter --dir {root} recall {AGENT} 'rate limit'\n")
        if json_output:
            summary["seconds"] = round(elapsed, 3)
            sys.stdout.write(json.dumps(summary) + "\n")
        return 0 if summary.get("roundtrip") else 1
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _seed(memory: Memory, root: Path) -> None:
    """Import the history, then remember the live facts."""
    _section(f"history: {len(HISTORY)} facts of the past six weeks imported (store: {root})")
    memory.import_bundle(_history())
    _section(f"remember: {len(SEED)} new facts for {AGENT!r}, {len(SHARED_SEED)} shared")
    for text in SEED:
        memory.remember(AGENT, text, provenance={"interface": "cli", "client": "demo"})
    for text in SHARED_SEED:
        memory.remember_shared(text, confidence="verified")
    _write(f"stored {memory.stats(AGENT).fact_count} agent facts; agents: {memory.agents()}\n")


def _recall_tour(memory: Memory) -> None:
    """Recall with explanations, teach an alias, revise a fact and recall again."""
    _section("recall with explanations (RRF k=60: keyword 1.0, vector 1.0, recency 0.5)")
    _explain(memory, "which database does production use?")
    _explain(memory, "how should we tell Acme about an incident?", scope="all")

    _section("alias: teach vocabulary, then recall with the other word")
    memory.alias(AGENT, "db", ["database"])
    _explain(memory, "db region")

    _section("revise: supersede a fact (replacement first, then tombstone)")
    old = "Deploys happen every Tuesday and Thursday after 14:00 UTC"
    revision = memory.revise(AGENT, old, "Deploys happen every Wednesday after 15:00 UTC (changed in Q3)")
    _write(f"new fact {revision.fact.id} supersedes {revision.superseded_ids}\n")
    _explain(memory, "when do deploys happen?")
    retired = [f for f in memory.list(AGENT) if not f.live]
    _write(f"tombstones kept for history: {len(retired)} (never returned by recall)\n")


def _checkpoint_tour(memory: Memory) -> dict[str, Any]:
    """Save a checkpoint and resume it; returns the summary fields."""
    _section("checkpoint round trip")
    state = {"ticket": "ACME-1042", "step": 3, "notes": ["asked for logs", "waiting on customer"]}
    saved = memory.checkpoint_save(
        AGENT, state, messages=[{"role": "user", "content": "status?"}], metadata={"source": "demo"}
    )
    loaded = memory.checkpoint_latest(AGENT)
    same = loaded.state == state and loaded.id == saved.id
    _write(f"saved {saved.id}; resumed latest {loaded.id}: state identical = {same}\n")
    _write(json.dumps(loaded.state, indent=2) + "\n")
    return {"facts": memory.stats(AGENT).fact_count, "checkpoint": saved.id, "roundtrip": same}
