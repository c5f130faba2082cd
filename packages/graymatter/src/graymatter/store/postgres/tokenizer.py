"""FTS5 stems as PostgreSQL stores them: ``tsvector`` literals and the token positions the postings keep."""

from __future__ import annotations

MAX_TERM_COUNT = 256  # PostgreSQL keeps at most 256 positions per lexeme
MAX_POSITION = 16383  # and positions up to 16383
MAX_LEXEME_BYTES = 2046  # PostgreSQL's limit on one lexeme is 2 KiB
_SAFE_CHARS = MAX_LEXEME_BYTES // 4  # a stem this short never needs clipping (UTF-8: at most 4 bytes a char)


def clip_lexeme(lexeme: str) -> str:
    """The stem cut to the longest lexeme PostgreSQL stores (at a character boundary)."""
    raw = lexeme.encode()
    if len(raw) <= MAX_LEXEME_BYTES:
        return lexeme
    return raw[:MAX_LEXEME_BYTES].decode(errors="ignore")


def _quote_lexeme(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def stored_positions(positions: dict[str, list[int]]) -> dict[str, list[int]]:
    """Per stored lexeme (clipped stem), its token positions as a ``tsvector`` keeps them: distinct,
    at most 16,383, the first 256, ascending. Lexemes in sorted order."""
    short = all(
        len(stem) <= _SAFE_CHARS and len(places) <= MAX_TERM_COUNT for stem, places in positions.items()
    )
    if short and max((places[-1] for places in positions.values() if places), default=0) <= MAX_POSITION:
        return {stem: positions[stem] for stem in sorted(positions)}  # the tokenizer's: ascending, distinct
    merged: dict[str, list[int]] = {}
    for stem, places in positions.items():
        merged.setdefault(clip_lexeme(stem), []).extend(places)
    return {
        stem: sorted({min(p, MAX_POSITION) for p in merged[stem]})[:MAX_TERM_COUNT] for stem in sorted(merged)
    }


def tsvector_literal(positions: dict[str, list[int]], *, stored: bool = False) -> str:
    """A ``tsvector`` input literal: each stem with its token positions (PostgreSQL keeps <= 256 each);
    ``stored``: ``positions`` is already what :func:`stored_positions` returns."""
    kept = positions if stored else stored_positions(positions)
    return " ".join(_quote_lexeme(stem) + ":" + ",".join(map(str, places)) for stem, places in kept.items())


def plain_tsvector(places: dict[str, list[int]], doc_len: int) -> str | None:
    """The ``tsvector`` literal of a fact PostgreSQL stores exactly as analysed — at most 256 tokens (so
    every position is kept), stems short and without a quote or backslash — or ``None`` (then
    :func:`stored_positions` says what is kept). The common case, formatted without copying or sorting
    (one loop; most stems stand once, so their single position needs no join)."""
    if doc_len > MAX_TERM_COUNT:
        return None
    parts = []
    for stem, at in places.items():
        if len(stem) > _SAFE_CHARS or "'" in stem or "\\" in stem:
            return None
        parts.append(f"'{stem}':{at[0]}" if len(at) == 1 else f"'{stem}':{','.join(map(str, at))}")
    return " ".join(parts)
