"""Seeded generator of realistic engineering-team facts and natural-language queries.

The scale benchmarks need many distinct, plausible facts whose vocabulary behaves like real notes:
a few very frequent words ("the", "service", "deploy", "team"), a long tail of rare ones (ticket
numbers, hosts, versions) and queries phrased the way agents ask ("what did we decide about ...").
Everything is derived from ``random.Random(seed)`` so a given (seed, n) always yields the same text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

PEOPLE = (
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Uma",
    "Victor",
    "Wendy",
    "Xavier",
    "Yara",
    "Zoe",
    "Priya",
    "Mateo",
    "Chen",
    "Fatima",
    "Kenji",
    "Lars",
    "Amara",
    "Diego",
    "Ingrid",
    "Omar",
    "Sofia",
)
TEAMS = (
    "platform team",
    "payments team",
    "search team",
    "mobile team",
    "data team",
    "security team",
    "infra team",
    "growth team",
    "support team",
    "billing team",
    "design team",
    "sre team",
)
SERVICES = (
    "payment service",
    "auth gateway",
    "search indexer",
    "notification worker",
    "billing api",
    "user profile service",
    "checkout frontend",
    "recommendation engine",
    "ingest pipeline",
    "report generator",
    "feature flag service",
    "session store",
    "image resizer",
    "audit logger",
    "rate limiter",
    "email sender",
    "webhook dispatcher",
    "analytics warehouse",
    "config service",
    "order service",
    "inventory sync",
    "pricing engine",
    "fraud detector",
    "export job",
    "mobile backend",
    "admin console",
    "metrics collector",
    "cache layer",
    "queue consumer",
    "document store",
    "translation service",
    "scheduler",
    "geo lookup",
    "ledger service",
)
TECH = (
    "postgres",
    "redis",
    "kafka",
    "kubernetes",
    "terraform",
    "nginx",
    "grafana",
    "prometheus",
    "sqlite",
    "elasticsearch",
    "rabbitmq",
    "s3",
    "cloudflare",
    "github actions",
    "docker",
    "helm",
    "vault",
    "sentry",
    "datadog",
    "opentelemetry",
    "envoy",
    "memcached",
    "clickhouse",
    "airflow",
)
EVENTS = (
    "the outage",
    "the incident review",
    "the sprint planning",
    "the design review",
    "the retro",
    "the on-call handover",
    "the migration",
    "the load test",
    "the security audit",
    "the release",
    "the customer escalation",
    "the architecture meeting",
    "the quarterly planning",
    "the postmortem",
)
WHEN = (
    "on Monday",
    "on Tuesday",
    "on Wednesday",
    "on Thursday",
    "on Friday",
    "last week",
    "yesterday",
    "this morning",
    "after lunch",
    "before the freeze",
    "during the weekend",
    "at the end of the sprint",
    "in March",
    "in April",
    "in May",
    "in June",
    "last quarter",
    "next month",
)
ADJ = (
    "slow",
    "flaky",
    "stable",
    "expensive",
    "critical",
    "deprecated",
    "noisy",
    "fragile",
    "fast",
    "overloaded",
    "misconfigured",
    "healthy",
    "stale",
    "broken",
    "experimental",
    "urgent",
)
NOUNS = (
    "timeout",
    "retry policy",
    "connection pool",
    "memory limit",
    "error budget",
    "alert threshold",
    "rollback plan",
    "feature flag",
    "api key",
    "rate limit",
    "cache ttl",
    "batch size",
    "schema change",
    "dashboard",
    "runbook",
    "certificate",
    "dependency",
    "backup",
    "index",
    "replica",
    "quota",
    "latency",
)
ACTIONS = (
    "raised",
    "lowered",
    "removed",
    "added",
    "rotated",
    "documented",
    "rewrote",
    "tuned",
    "disabled",
    "enabled",
    "migrated",
    "replaced",
    "reviewed",
    "monitored",
    "split",
    "merged",
    "pinned",
    "upgraded",
)

TEMPLATES = (
    "{person} said the {service} {was} {adj} after {event} {when}, so we {action} the {noun}.",
    "We decided to move the {service} to {tech} {when} because the old {noun} was too {adj}.",
    "The {team} owns the {service}; ask {person} before you change its {noun}.",
    "{person} {action} the {noun} of the {service} to {num} {when} (ticket {ticket}).",
    "During {event} we found that the {service} depends on {tech} for its {noun}.",
    "Never deploy the {service} on a Friday: the {noun} is {adj} and {person} is the only one on call.",
    "The {noun} for the {service} lives in {tech}; {person} rotated it {when}.",
    "{person} prefers {tech} over {tech2} for the {service} because it is less {adj}.",
    "Rollback of the {service} takes about {num} minutes; the runbook is in {host}.",
    "The {team} agreed {when} that every {noun} change to the {service} needs a review from {person}.",
    "Latency of the {service} went up to {num} ms {when} after the {tech} upgrade to {version}.",
    "{person} is on leave {when}; {person2} covers the {service} and the {noun}.",
    "The {service} writes its logs to {tech} and alerts go to the {team} channel.",
    "We postponed the {noun} work on the {service} until after {event}.",
    "Customer {ticket} reported that the {service} was {adj} {when}; {person} is investigating.",
    "The staging copy of the {service} runs on {host} with {tech} {version}.",
)


def _fill(template: str, rng: random.Random) -> str:
    person, person2 = rng.sample(PEOPLE, 2)
    tech, tech2 = rng.sample(TECH, 2)
    return template.format(
        person=person,
        person2=person2,
        team=rng.choice(TEAMS),
        service=rng.choice(SERVICES),
        tech=tech,
        tech2=tech2,
        event=rng.choice(EVENTS),
        when=rng.choice(WHEN),
        adj=rng.choice(ADJ),
        noun=rng.choice(NOUNS),
        action=rng.choice(ACTIONS),
        was=rng.choice(("was", "became", "looked", "felt")),
        num=rng.choice((2, 3, 5, 8, 10, 15, 20, 30, 45, 60, 90, 120, 250, 500, 1000)),
        ticket=f"INC-{rng.randrange(1000, 99999)}",
        host=f"{rng.choice(('build', 'stage', 'ops', 'db', 'web', 'job'))}-{rng.randrange(1, 400):03d}",
        version=f"{rng.randrange(1, 20)}.{rng.randrange(0, 30)}.{rng.randrange(0, 10)}",
    )


def generate_facts(n: int, seed: int = 42) -> list[str]:
    """Return ``n`` distinct fact texts, identical for the same (n, seed)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    facts: list[str] = []
    while len(facts) < n:
        text = _fill(rng.choice(TEMPLATES), rng)
        if text not in seen:
            seen.add(text)
            facts.append(text)
    return facts


QUERY_TEMPLATES = (
    "what did we decide about the {service} {when}?",
    "who owns the {service} and who should I ask about the {noun}?",
    "how do I roll back the {service} if the deploy goes wrong",
    "why is the {service} so {adj} lately",
    "what is the {noun} of the {service}",
    "which team is responsible for the {service}",
    "what happened to the {service} during {event}",
    "is the {service} still running on {tech}",
    "what did {person} change in the {service} {when}",
    "where are the logs and alerts for the {service}",
    "can I deploy the {service} on a Friday",
    "what do we know about {tech} and the {noun}",
    "who is covering for {person} while they are on leave",
    "what is the latency of the {service} after the upgrade",
)


def generate_queries(n: int, seed: int = 7) -> list[str]:
    """Return ``n`` natural-language questions (full of frequent words) over the same vocabulary."""
    rng = random.Random(seed)
    return [_fill(rng.choice(QUERY_TEMPLATES), rng) for _ in range(n)]


def iter_batches(items: list[str], size: int) -> Iterator[list[str]]:
    """Yield consecutive slices of ``items`` of at most ``size`` elements."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
