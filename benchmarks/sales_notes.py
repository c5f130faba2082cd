"""Seeded sales-domain session notes (50-70 words each), the corpus shape of the Go ``token_count`` benchmark.

One note is one session's observation. The text is generated from sentence pools with
``random.Random(seed)``, so the corpus is identical on every run.
"""

from __future__ import annotations

import random

CONTACTS = ("Maria Lopez", "James Carter", "Aiko Tanaka", "Peter Novak", "Leila Haddad", "Tom Brennan")
COMPANIES = ("Northwind", "Contoso", "Fabrikam", "Tailspin", "Litware", "Adatum", "Wingtip", "Proseware")
PRODUCTS = ("analytics suite", "mobile SDK", "data connector", "enterprise plan", "support package")
COLLEAGUES = ("Sam from legal", "Nina from solutions", "Raj from finance", "Ella from support")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

OPENERS = (
    "Met with {contact} from {company} about the {product} rollout across their regional offices.",
    "Call with {contact} at {company}; they are comparing our {product} with two other vendors.",
    "Demo of the {product} for {company} went well and {contact} brought three engineers along.",
    "{contact} from {company} reached out after the webinar and asked about the {product}.",
)
MIDDLES = (
    "They asked for a {pct} percent discount on the annual contract and a security review before signing.",
    "Their main concern is onboarding time, since the previous tool took months to roll out to every team.",
    "Procurement needs a signed data processing agreement and references from two customers of similar size.",
    "Budget is approved for next quarter, but the final decision sits with their chief financial officer.",
    "They currently pay per seat and want to understand how usage based pricing would change the bill.",
    "Integration with their existing warehouse is a hard requirement and must be shown in a pilot.",
)
CLOSERS = (
    "Next step: send the revised proposal by {day} and loop in {colleague}.",
    "Follow up on {day} with the pilot plan and a draft timeline for the first phase.",
    "Action item: schedule a technical deep dive with {colleague} before the end of the month.",
    "Deal stage moved to negotiation; expected close in {weeks} weeks if legal review goes smoothly.",
    "Prospect is warm but not urgent; check in again in {weeks} weeks with the new case study.",
)

FIXED_QUERY = "follow up with prospects and close pending deals this week"


def _sentence(pool: tuple[str, ...], rng: random.Random) -> str:
    return rng.choice(pool).format(
        contact=rng.choice(CONTACTS),
        company=rng.choice(COMPANIES),
        product=rng.choice(PRODUCTS),
        colleague=rng.choice(COLLEAGUES),
        day=rng.choice(DAYS),
        pct=rng.choice((5, 10, 12, 15, 20)),
        weeks=rng.choice((2, 3, 4, 6)),
    )


def generate_notes(n: int = 100, seed: int = 42, min_words: int = 50, max_words: int = 70) -> list[str]:
    """Return ``n`` distinct notes of ``min_words``-``max_words`` words, in session order."""
    rng = random.Random(seed)
    notes: list[str] = []
    seen: set[str] = set()
    while len(notes) < n:
        parts = [_sentence(OPENERS, rng)]
        parts.extend(_sentence(MIDDLES, rng) for _ in range(rng.choice((1, 2))))
        parts.append(_sentence(CLOSERS, rng))
        note = " ".join(parts)
        words = len(note.split())
        while words < min_words:
            note = f"{note} {_sentence(MIDDLES, rng)}"
            words = len(note.split())
        if words <= max_words and note not in seen:
            seen.add(note)
            notes.append(note)
    return notes
