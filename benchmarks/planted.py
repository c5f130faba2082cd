"""Seeded "project memory" corpus with planted facts, their questions, and revision families.

Used by the token-reduction benchmark (systems compared the way the Go original's
``retrieval_quality`` and ``revision_currency`` benchmarks compare them) and by the synthetic
quality suite that CI checks. Facts arrive in sessions 1..N (one ``remember`` after another, so
insertion order is time order); questions are asked after the last session.

Questions are phrased the way a person would ask, not copied from the fact: most share one or two
content words with their gold fact, a few share none (the honest misses keyword retrieval cannot
find). Distractors reuse the same services, people and tools, so a shared name is never enough.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchmarks.corpus import PEOPLE, SERVICES, TEAMS, TECH, generate_facts

COMPANIES = ("Acme Corp", "Globex", "Initech", "Umbrella Labs", "Hooli", "Stark Industries", "Wayne Foods")
MONTHS = ("January", "February", "March", "April", "September", "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
ROOMS = ("Orion", "Vega", "Lyra", "Atlas", "Nova")

# (class, fact template, question template). Class "lexical" questions share at least one rare
# content word with the fact; "paraphrase" questions share only common words or none at all.
PLANTED_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    (
        "lexical",
        "The {service} database password is rotated every {n} days by {person}.",
        "how often do we rotate the {service} database password?",
    ),
    (
        "lexical",
        "{person} is the escalation contact for {service} incidents outside business hours.",
        "who is the escalation contact for {service} incidents at night?",
    ),
    (
        "lexical",
        "Deploys of the {service} must go through the {tech} pipeline, never a manual kubectl apply.",
        "how should I deploy the {service}?",
    ),
    (
        "paraphrase",
        "Rollbacks of the {service} use the blue-green switch in {tech}.",
        "how do i roll back a bad deploy of the {service}",
    ),
    (
        "lexical",
        "The public API of the {service} is throttled at {n} requests per minute per customer.",
        "what is the throttling limit of the {service} public API?",
    ),
    (
        "lexical",
        "{company} is on the enterprise plan and their contract renewal is due in {month}.",
        "when is the contract renewal for {company}?",
    ),
    (
        "paraphrase",
        "The {team} stand-up happens at 9:30 in the {room} room.",
        "when is the {team} standup",
    ),
    (
        "lexical",
        "{person} wants code review comments sent by email, not in chat.",
        "how does {person} want code review comments?",
    ),
    (
        "lexical",
        "The on-call rotation of the {team} hands over every {weekday} at noon.",
        "what day does the {team} on-call rotation hand over?",
    ),
    (
        "lexical",
        "The {service} stores uploaded invoices in the {bucket} bucket for seven years.",
        "where do uploaded invoices of the {service} go?",
    ),
    (
        "paraphrase",
        "{person} is allergic to peanuts, so team lunches must be nut-free.",
        "any food restrictions for team lunch?",
    ),
    (
        "lexical",
        "The staging environment of the {service} is wiped and reseeded every {weekday} night.",
        "when does the {service} staging environment get reseeded?",
    ),
)

# (subject question, fact template with {value}); values of one family come from VALUES in order.
REVISION_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("which {tech} version does the {service} run?", "The {service} runs on {tech} version {value}."),
    ("who leads the {team}?", "The {team} is led by {value}."),
    ("what is the request timeout of the {service}?", "The request timeout of the {service} is {value}."),
    ("which region hosts the {service}?", "The {service} is hosted in the {value} region."),
)
REVISION_VALUES: dict[int, tuple[str, ...]] = {
    0: ("11.2", "12.4", "13.1", "14.0", "15.3", "16.1"),
    1: PEOPLE,
    2: ("5 seconds", "10 seconds", "30 seconds", "2 seconds", "45 seconds", "90 seconds"),
    3: ("eu-west-1", "us-east-2", "ap-south-1", "eu-central-1", "us-west-2", "sa-east-1"),
}


@dataclass(frozen=True)
class PlantedFact:
    text: str
    session: int
    question: str
    query_class: str


@dataclass(frozen=True)
class RevisionFamily:
    question: str
    versions: tuple[str, ...]  # oldest first; the last is current
    sessions: tuple[int, ...]


@dataclass
class PlantedCorpus:
    sessions: int
    # (session, text) in insertion order; contains distractors, planted facts and every revision version
    timeline: list[tuple[int, str]] = field(default_factory=list)
    planted: list[PlantedFact] = field(default_factory=list)
    families: list[RevisionFamily] = field(default_factory=list)

    @property
    def retired_texts(self) -> set[str]:
        """Every non-current revision text: recall must never return these once revised."""
        return {text for fam in self.families for text in fam.versions[:-1]}


def _slots(rng: random.Random) -> dict[str, object]:
    return {
        "service": rng.choice(SERVICES),
        "person": rng.choice(PEOPLE),
        "team": rng.choice(TEAMS),
        "tech": rng.choice(TECH),
        "company": rng.choice(COMPANIES),
        "month": rng.choice(MONTHS),
        "weekday": rng.choice(WEEKDAYS),
        "room": rng.choice(ROOMS),
        "bucket": f"{rng.choice(('finance', 'archive', 'docs', 'legal'))}-{rng.randrange(10, 99)}",
        "n": rng.choice((30, 60, 90, 120, 600, 1000)),
    }


def generate(
    *,
    seed: int = 42,
    sessions: int = 100,
    distractors_per_session: int = 3,
    planted_per_template: int = 2,
    families_per_template: int = 3,
    versions_per_family: int = 3,
) -> PlantedCorpus:
    """Build the corpus. Planted facts land in the first tenth of the sessions (old knowledge),
    revision versions are spread across the whole timeline, distractors fill every session."""
    rng = random.Random(seed)
    corpus = PlantedCorpus(sessions=sessions)
    by_session: dict[int, list[str]] = {s: [] for s in range(1, sessions + 1)}
    used: set[str] = set()
    early = max(2, sessions // 10)

    for query_class, fact_tpl, question_tpl in PLANTED_TEMPLATES:
        made = 0
        while made < planted_per_template:
            slots = _slots(rng)
            text = fact_tpl.format(**slots)
            question = question_tpl.format(**slots)
            if text in used:
                continue
            used.add(text)
            session = rng.randint(2, early)
            by_session[session].append(text)
            corpus.planted.append(PlantedFact(text, session, question, query_class))
            made += 1

    subjects: set[str] = set()
    for index, (question_tpl, fact_tpl) in enumerate(REVISION_TEMPLATES):
        made = 0
        while made < families_per_template:
            slots = _slots(rng)
            question = question_tpl.format(**slots)
            if question in subjects:
                continue
            subjects.add(question)
            values = rng.sample(REVISION_VALUES[index], versions_per_family)
            versions = tuple(fact_tpl.format(value=v, **slots) for v in values)
            points = sorted(rng.sample(range(1, sessions + 1), versions_per_family))
            for session, text in zip(points, versions, strict=True):
                by_session[session].append(text)
                used.add(text)
            corpus.families.append(RevisionFamily(question, versions, tuple(points)))
            made += 1

    pool = iter(generate_facts(sessions * distractors_per_session * 2, seed=seed + 1))
    for session in range(1, sessions + 1):
        for _ in range(distractors_per_session):
            text = next(pool)
            while text in used:
                text = next(pool)
            used.add(text)
            by_session[session].append(text)
        rng.shuffle(by_session[session])
        corpus.timeline.extend((session, text) for text in by_session[session])
    return corpus
