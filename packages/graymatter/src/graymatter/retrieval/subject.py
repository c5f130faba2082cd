"""Subject re-scoring: a keyword match whose leading word is one the query names is about what it asks.

A fact's first informative word names what it is about: the subject of a statement ("Caroline is
planning…", "Deploys happen on Tuesdays", "Acme Corp is on the Enterprise plan") or the speaker of a
conversation turn ("Melanie: …"). It works like a title field in field-weighted BM25: a query that names
that word ("What does Melanie do to destress?", "when do we deploy?") asks about those facts, while a fact
that only mentions it further on ("Caroline went hiking with Melanie") is about something else. BM25
cannot see the difference: it weighs a word by its rarity, and the name of the person a store is about is
in about half its facts, so it counts for almost nothing.

:func:`subject_rescore` multiplies the final keyword score (own match plus context loan) of each fact
whose leading word shares a stem with an informative query word by ``1 + SUBJECT_WEIGHT``. The factor is at
least 1 and applies only to facts that already have keyword evidence, so no fact is returned for its
leading word alone. The weight was measured on the LoCoMo development split (ADR 0011, "Quality,
session 5"); ``RecallRequest.subject_weight = 0`` disables it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from graymatter.retrieval.memo import remember_bounded
from graymatter.retrieval.query import _TOKEN, STOP_WORDS, normalise
from graymatter.store.fts import FtsTokenizer

SUBJECT_WEIGHT = 1.0
LEAD_CHARS = 64
"""A fact's leading word is looked for in its first this many characters (a subject or a speaker label)."""

_TOKENIZER = FtsTokenizer()


def leading_word(text: str) -> str | None:
    """The first informative word of ``text`` (normalised, not stemmed; stop-words and single letters
    skipped, digits kept), looked for in its first :data:`LEAD_CHARS` characters; None if there is none."""
    for match in _TOKEN.finditer(text, 0, LEAD_CHARS):
        token = match.group()
        word = token.lower() if token.isascii() else normalise(token)  # the same for ASCII letters and digits
        if word and word not in STOP_WORDS and (len(word) > 1 or word.isdigit()):
            return word
    return None


KNOWN_ENTRIES = 8192
"""Texts whose leading word's stems are remembered (a recall re-reads the matches of the last ones)."""
_KNOWN: dict[str, frozenset[str]] = {}


def _lead_stems(texts: Sequence[str]) -> dict[str, frozenset[str]]:
    """The index stems of each text's :func:`leading_word` (empty when there is none), also remembered for
    up to :data:`KNOWN_ENTRIES` texts (oldest eighth dropped); the new words go to the tokenizer at once."""
    words = {text: leading_word(text) for text in texts}
    unique = list(dict.fromkeys(word for word in words.values() if word is not None))
    stems = dict(zip(unique, map(frozenset, _TOKENIZER.stems(unique)), strict=True)) if unique else {}
    found = {text: stems[word] if word is not None else frozenset() for text, word in words.items()}
    for text, lead in found.items():
        remember_bounded(_KNOWN, text, lead, KNOWN_ENTRIES)
    return found


def _lead(text: str, fresh: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The leading stems of ``text``: from ``fresh``, else remembered, else analysed now (another thread
    may have evicted it meanwhile)."""
    lead = fresh.get(text)
    if lead is None:
        lead = _KNOWN.get(text)
    return lead if lead is not None else _lead_stems([text])[text]


def subject_rescore(
    keyword_score: dict[str, float],
    texts: Callable[[Sequence[str]], Mapping[str, str]],
    query_stems: frozenset[str],
    weight: float = SUBJECT_WEIGHT,
) -> dict[str, float]:
    """``keyword_score`` with the score of each fact whose leading word has a stem in ``query_stems``
    multiplied by ``1 + weight`` (``texts``: id -> text of the facts asked for); the same dict when
    nothing applies."""
    if weight <= 0 or not keyword_score or not query_stems:
        return keyword_score
    found = texts(list(keyword_score))
    known, disjoint = _KNOWN, query_stems.isdisjoint
    try:
        matching = [fid for fid, text in found.items() if not disjoint(known[text])]
    except KeyError:  # texts seen for the first time: their leading words go to the tokenizer together
        fresh = _lead_stems([text for text in found.values() if text not in known])
        matching = [fid for fid, text in found.items() if not disjoint(_lead(text, fresh))]
    if not matching:
        return keyword_score
    factor = 1.0 + weight
    out = dict(keyword_score)  # the same keys in the same order
    for fid in matching:
        if fid in out:  # a reader answering more than it was asked changes nothing else
            out[fid] = keyword_score[fid] * factor
    return out
