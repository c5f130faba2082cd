"""``graymatter demo``: a support bot's memory in five short steps, offline, on a temporary store.

What ``make demo`` runs. It tells one story a newcomer can follow: the bot remembers, recalls in the
reader's own words (with a relevance a person can read), learns vocabulary, revises a fact that changed
and round-trips a checkpoint. With ``--json`` the same story is one JSON document on stdout.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graymatter.engine.memory import Memory
    from graymatter.models import ExportBundle, RecallExplanation

AGENT = "support-bot"
HISTORY = [  # (days ago, fact): what the bot learnt over the past weeks, loaded with its real dates
    (41, "The production database is PostgreSQL 16 running in eu-west-1"),
    (35, "Deploys happen every Tuesday and Thursday after 14:00 UTC"),
    (29, "Customer Acme Corp is on the Enterprise plan with a 99.95% SLA"),
    (23, "The on-call rotation changes every Monday at 09:00 UTC"),
    (18, "Refunds above 500 EUR need approval from the finance team"),
    (12, "The staging cluster is called kestrel and mirrors production weekly"),
    (7, "Alice owns the billing service; Bob owns the search service"),
    (3, "Error budget alerts go to the #sre-alerts Slack channel"),
]
TODAY = [
    "The API rate limit is 600 requests per minute per token",
    "Acme Corp prefers email over phone for incident updates",
]
SHARED = [
    "Company-wide: never share customer data in public channels",
    "Company-wide: the incident commander decides on customer communication",
]
OLD_DEPLOYS = "Deploys happen every Tuesday and Thursday after 14:00 UTC"
NEW_DEPLOYS = "Deploys happen every Wednesday after 15:00 UTC (changed in Q3)"
STATE = {"ticket": "ACME-1042", "step": 3, "notes": ["asked for logs", "waiting on customer"]}
SHOWN = 3
"""Answers shown per question."""


class Story:
    """Collects the demo's steps; prints them as they happen unless the output is JSON."""

    def __init__(self, json_output: bool) -> None:
        self.json_output = json_output
        self.steps: list[dict[str, Any]] = []

    def step(self, title: str, intro: str) -> dict[str, Any]:
        """Start a numbered step and return its JSON record."""
        record: dict[str, Any] = {"step": len(self.steps) + 1, "title": title}
        self.steps.append(record)
        wrapped = textwrap.fill(intro, width=100, initial_indent="   ", subsequent_indent="   ")
        self.say(f"\n{record['step']}. {title}\n{wrapped}")
        return record

    def say(self, text: str) -> None:
        """One line (or a few) of the story, unless the output is JSON."""
        if not self.json_output:
            sys.stdout.write(text + "\n")


def run_demo(keep: str | None = None, json_output: bool = False) -> int:
    """Tell the story on a temporary (or the ``keep``) store; returns the exit code."""
    from graymatter.config import MemoryConfig
    from graymatter.engine.memory import Memory

    started = time.perf_counter()
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="graymatter-demo-"))
    story = Story(json_output)
    story.say(f"graymatter demo: a support bot's memory, on a temporary store ({root}); offline.")
    try:
        with Memory(root, embedder=None, config=MemoryConfig(embedding="keyword")) as memory:
            _remember(story, memory)
            _recall(story, memory)
            _vocabulary(story, memory)
            _revise(story, memory)
            same = _checkpoint(story, memory)
        elapsed = time.perf_counter() - started
        _finish(story, root, keep, elapsed, same)
        return 0 if same else 1
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _finish(story: Story, root: Path, keep: str | None, elapsed: float, same: bool) -> None:
    if story.json_output:
        summary = {"store": str(root), "kept": bool(keep), "seconds": round(elapsed, 3), "roundtrip": same}
        sys.stdout.write(json.dumps({**summary, "steps": story.steps}) + "\n")
        return
    story.say(f"\nDone in {elapsed:.2f} s.")
    if keep:
        story.say(f"The store is kept: graymatter --dir {root} recall {AGENT} 'rate limit'")
    story.say(
        "Try it on your own store:\n"
        f'  graymatter --dir gm remember {AGENT} "Deploys happen on Tuesdays"\n'
        f'  graymatter --dir gm recall {AGENT} "when do we deploy?" --explain\n'
        "Then wire your coding agent: graymatter init (see README.md)."
    )


def _remember(story: Story, memory: Memory) -> None:
    record = story.step(
        "Remember",
        f"The bot learnt {len(HISTORY)} facts over the past six weeks (imported with their dates), "
        f"{len(TODAY)} more today, and the company keeps {len(SHARED)} facts every agent shares.",
    )
    memory.import_bundle(_history())
    for text in TODAY:
        memory.remember(AGENT, text, provenance={"interface": "cli", "client": "demo"})
        story.say(f"   + {text}")
    for text in SHARED:
        memory.remember_shared(text, confidence="verified")
        story.say(f"   + (shared) {text}")
    record["facts"] = memory.stats(AGENT).fact_count
    record["shared_facts"] = len(SHARED)


def _recall(story: Story, memory: Memory) -> None:
    record = story.step(
        "Recall: ask in your own words",
        "Each answer shows its relevance: how much of the question it covers.",
    )
    record["questions"] = [
        _ask(story, memory, "which database does production use?"),
        _ask(story, memory, "how should we tell Acme about an incident?", scope="all"),
    ]
    story.say(
        "   The second question searched the bot's facts and the shared ones (scope all). Why this order:\n"
        "   `graymatter recall AGENT QUERY --explain` shows each signal's rank and the fused score."
    )


def _vocabulary(story: Story, memory: Memory) -> None:
    record = story.step(
        "Teach vocabulary", 'People write "db"; the facts say "database". One alias bridges it.'
    )
    memory.alias(AGENT, "db", ["database"])
    record["questions"] = [_ask(story, memory, "db region")]


def _revise(story: Story, memory: Memory) -> None:
    record = story.step(
        "Revise: facts change", "Deploys moved to Wednesdays. The correction supersedes the old fact."
    )
    revision = memory.revise(AGENT, OLD_DEPLOYS, NEW_DEPLOYS)
    story.say(f"   - {OLD_DEPLOYS}\n   + {NEW_DEPLOYS}")
    record["questions"] = [_ask(story, memory, "when do deploys happen?")]
    retired = [f for f in memory.list(AGENT) if not f.live]
    record["superseded"] = revision.superseded_ids
    story.say(f"   The old fact is kept as history ({len(retired)} superseded), never returned by recall.")


def _checkpoint(story: Story, memory: Memory) -> bool:
    record = story.step("Checkpoint: stop now, resume later", "The bot saves where it is in a ticket.")
    saved = memory.checkpoint_save(AGENT, STATE, metadata={"source": "demo"})
    story.say(f"   saved {json.dumps(STATE)}")
    loaded = memory.checkpoint_latest(AGENT)
    same = loaded.id == saved.id and loaded.state == STATE
    story.say(f"   A new session resumes the latest checkpoint: {'identical state' if same else 'MISMATCH'}.")
    record.update({"checkpoint": saved.id, "state": loaded.state, "identical": same})
    return same


def _ask(story: Story, memory: Memory, question: str, **options: Any) -> dict[str, Any]:
    """Recall for ``question``, print the answers with their relevance, return the JSON record."""
    hits = memory.recall_explain(AGENT, question, SHOWN, **options)
    story.say(f'\n   Q: "{question}"')
    answers = []
    for i, hit in enumerate(hits, 1):
        story.say(f"     {i}. {hit.text}\n        {_relevance(hit)}")
        answers.append({"text": hit.text, "relevance": hit.relevance, "evidence": _evidence(hit)})
    if not hits:
        story.say("     (nothing relevant)")
    return {"question": question, "answers": answers}


def _relevance(hit: RecallExplanation) -> str:
    shown = "-" if hit.relevance is None else f"{round(100 * hit.relevance)}%"
    return f"relevance {shown} ({_evidence(hit)})"


def _evidence(hit: RecallExplanation) -> str:
    if hit.keyword_source == "phrase":
        return "phrase match"
    if hit.keyword_source == "context":
        return "context of a matching turn"
    if hit.keyword_source == "synonym":
        return f"synonym match: {hit.keyword_synonym}"
    if hit.keyword_source == "match":
        return "keyword match"
    return "meaning match" if hit.ranks.vector_rank else "recency"


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
