"""LoCoMo retrieval tasks: loading the development split, writing its facts, scoring ranked results.

The data is read at run time from the shared location (never copied into the repository): every
turn becomes one fact ``"<speaker>: <text>"`` with its session date as metadata; every question of
categories 1-4 with evidence is a query; hit@k and MRR are computed over the evidence turns.
"""

from __future__ import annotations

import calendar
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DATA_ENV = "GRAYMATTER_LOCOMO_PATH"
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "locomo" / "locomo-dev.json"
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SCORED_CATEGORIES = frozenset(CATEGORY_NAMES)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    session_date: str
    speaker: str
    text: str

    @property
    def fact_text(self) -> str:
        """The fact stored for this turn: speaker-prefixed text, as the task defines it."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Observation:
    """One ``observation`` statement of a session (a fact-shaped memory) and the turns it comes from."""

    text: str
    dia_ids: frozenset[str]
    session: int = 0


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)


def data_path() -> Path:
    """Location of ``locomo-dev.json``: ``$GRAYMATTER_LOCOMO_PATH`` or the shared bench-data folder."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override)
    return DEFAULT_PATH


_SESSION_TIME = re.compile(r"(\d{1,2}):(\d\d)\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}


def session_time(text: str) -> datetime | None:
    """A LoCoMo session date ("7:31 pm on 21 January, 2022") as a UTC moment, or None."""
    match = _SESSION_TIME.search(text)
    if match is None or match.group(5).lower() not in _MONTHS:
        return None
    hour, minute, half, day, month, year = match.groups()
    hour_of_day = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), _MONTHS[month.lower()], int(day), hour_of_day, int(minute), tzinfo=UTC)


def _session_number(key: str) -> int | None:
    match = re.fullmatch(r"session_(\d+)", key)
    return int(match.group(1)) if match else None


def _evidence_ids(raw: Sequence[str]) -> frozenset[str]:
    """Evidence lists sometimes pack several ids in one string ("D8:6; D9:17"); split them."""
    ids: set[str] = set()
    for item in raw:
        ids.update(part for part in re.split(r"[;,\s]+", str(item)) if part)
    return frozenset(ids)


def _observations(raw: dict[str, Any]) -> list[Observation]:
    """Every session's observations in session order: ``{speaker: [[text, dia_id(s)], ...]}``."""
    out: list[Observation] = []
    keyed = sorted((n, key) for key in raw if (n := _session_number(key.removesuffix("_observation"))))
    for number, key in keyed:
        for items in raw[key].values():
            for text, ids in items:
                dia_ids = _evidence_ids(ids if isinstance(ids, list) else [ids])
                out.append(Observation(str(text), dia_ids, number))
    return out


def load_conversations(path: Path | None = None) -> list[Conversation]:
    """Parse the LoCoMo JSON into conversations with ordered turns and scorable questions.

    Questions keep only evidence ids that name a real turn; a question left without any is dropped
    (the task scores questions of categories 1-4 that have evidence).
    """
    source = path or data_path()
    if not source.is_file():
        from benchmarks.harness import MissingBenchmarkData

        raise MissingBenchmarkData(
            f"LoCoMo data not found at {source}; set {DATA_ENV} to the locomo-dev.json path"
        )
    raw = json.loads(source.read_text(encoding="utf-8"))
    conversations: list[Conversation] = []
    for sample in raw:
        conv = sample["conversation"]
        item = Conversation(sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]))
        sessions = sorted((n, key) for key in conv if (n := _session_number(key)) is not None)
        for number, key in sessions:
            date = str(conv.get(f"{key}_date_time", ""))
            for turn in conv[key]:
                item.turns.append(Turn(turn["dia_id"], number, date, turn["speaker"], turn["text"]))
        item.observations = _observations(sample.get("observation") or {})
        known = {t.dia_id for t in item.turns}
        for qa in sample["qa"]:
            if qa.get("category") not in SCORED_CATEGORIES:
                continue
            evidence = _evidence_ids(qa.get("evidence") or []) & known
            if evidence:
                item.questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
        conversations.append(item)
    return conversations


@dataclass
class Scores:
    """Accumulates hit@k and reciprocal ranks overall and per category."""

    k: int = 10
    per_category: dict[int, list[tuple[bool, float]]] = field(default_factory=dict)

    def add(self, category: int, ranked_ids: Sequence[str], evidence: frozenset[str]) -> None:
        rank = next((i for i, dia_id in enumerate(ranked_ids, start=1) if dia_id in evidence), 0)
        hit = 0 < rank <= self.k
        self.per_category.setdefault(category, []).append((hit, 1.0 / rank if rank else 0.0))

    @staticmethod
    def _summary(rows: list[tuple[bool, float]]) -> dict[str, float | int]:
        n = len(rows)
        return {
            "n": n,
            "hit_at_k": round(sum(h for h, _ in rows) / n, 4) if n else 0.0,
            "mrr": round(sum(r for _, r in rows) / n, 4) if n else 0.0,
        }

    def overall(self) -> dict[str, float | int]:
        return self._summary([row for rows in self.per_category.values() for row in rows])

    def by_category(self) -> dict[int, dict[str, float | int]]:
        return {c: self._summary(rows) for c, rows in sorted(self.per_category.items())}


Ranker = Callable[[str], list[str]]


def evaluate(
    conversations: Sequence[Conversation], build: Callable[[Conversation], Ranker], k: int
) -> Scores:
    """Score a system: ``build(conv)`` indexes one conversation and returns ``query -> ranked dia_ids``.

    The ranker is asked for MRR over its whole returned list; hit@k uses the first ``k`` ids.
    """
    scores = Scores(k=k)
    for conv in conversations:
        rank = build(conv)
        for question in conv.questions:
            scores.add(question.category, rank(question.text), question.evidence)
    return scores


def write_plain(memory: Any, task: str, conv: Conversation, sessions: str) -> None:
    """The task's facts written all at once (``remember_many``; turns with their session)."""
    if task == "observations":
        memory.remember_many(conv.sample_id, [o.text for o in conv.observations])
        return
    for number in dict.fromkeys(t.session for t in conv.turns):
        texts = [t.fact_text for t in conv.turns if t.session == number]
        session = f"{conv.sample_id}/session-{number}" if sessions == "locomo" else conv.sample_id
        memory.remember_many(conv.sample_id, texts, session=session)


def write_dated(memory: Any, task: str, conv: Conversation, sessions: str) -> None:
    """The task's facts imported with their session's date as ``created_at``, one second apart, in order."""
    from graymatter.ids import new_ulid
    from graymatter.models import ExportBundle, Fact, Provenance, utcnow

    starts = {t.session: session_time(t.session_date) for t in conv.turns}
    if task == "observations":
        items = [(o.session, o.text, None) for o in conv.observations]
    else:
        one = sessions != "locomo"
        items = [
            (t.session, t.fact_text, conv.sample_id if one else f"{conv.sample_id}/session-{t.session}")
            for t in conv.turns
        ]
    rows = []
    for i, (number, text, session) in enumerate(items):
        start = starts.get(number)
        assert start is not None, f"{conv.sample_id}: session {number} has no date"
        at = start + timedelta(seconds=i)
        fid = new_ulid(int(at.timestamp() * 1000))
        rows.append(
            Fact(
                id=fid,
                agent_id=conv.sample_id,
                text=text,
                created_at=at,
                accessed_at=at,
                provenance=Provenance(session=session),
            )
        )
    memory.import_bundle(ExportBundle(exported_at=utcnow(), facts=rows, checkpoints=[], links=[]))
