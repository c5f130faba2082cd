"""The FTS5 tokenizer both backends rank with: its definition, and an in-process copy of it."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Sequence

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

Analysis = tuple[dict[str, list[int]], int]
"""A text's ``(stem -> 1-based token positions, number of tokens)``; shared by the cache: read only."""

CACHE_ENTRIES = 4096
"""Analyses kept per process (query words and the texts recall returns repeat; the tokenizer never changes,
so a cached analysis is exactly what the tokenizer would say). Oldest dropped first."""
CACHE_MAX_CHARS = 512
"""Longer texts are analysed every time (they rarely repeat and would crowd the cache out)."""

_CACHE: dict[str, Analysis] = {}


def _remember(text: str, analysis: Analysis) -> None:
    if len(_CACHE) >= CACHE_ENTRIES:
        try:
            for old in list(itertools.islice(_CACHE, CACHE_ENTRIES // 8)):
                _CACHE.pop(old, None)
        except RuntimeError:  # another thread changed the cache meanwhile
            _CACHE.clear()
    _CACHE[text] = analysis


class FtsTokenizer:
    """SQLite FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, run in process.

    Using SQLite's own tokenizer (not a PostgreSQL dictionary) is what makes keyword ranking identical
    on both backends. One in-memory SQLite connection per thread.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(f"CREATE VIRTUAL TABLE tok USING fts5(t, tokenize='{FTS_TOKENIZER}')")
            conn.execute("CREATE VIRTUAL TABLE tok_vocab USING fts5vocab(tok, 'instance')")
            self._local.conn = conn
        return conn

    def analyse(self, texts: Sequence[str]) -> list[Analysis]:
        """For each text: ``(stem -> 1-based token positions, number of tokens)``, stems in text order.

        Short texts are answered from a bounded per-process cache; the results must not be mutated."""
        found = [_CACHE.get(text) for text in texts]
        missing = list(dict.fromkeys(t for t, hit in zip(texts, found, strict=True) if hit is None))
        if missing:
            fresh = dict(zip(missing, self._analyse(missing), strict=True))
            for text, analysis in fresh.items():
                if len(text) <= CACHE_MAX_CHARS:
                    _remember(text, analysis)
            found = [hit if hit is not None else fresh[text] for text, hit in zip(texts, found, strict=True)]
        return [hit for hit in found if hit is not None]

    def cached(self, texts: Sequence[str]) -> list[Analysis | None]:
        """For each text, its cached analysis, or ``None`` (nothing is analysed; read only, as above)."""
        return [_CACHE.get(text) for text in texts]

    def stems(self, terms: Sequence[str]) -> list[list[str]]:
        """The index stems of each term, in text order (what FTS5 searches for when given the term)."""
        return [list(positions) for positions, _ in self.analyse(terms)]

    def _analyse(self, texts: Sequence[str]) -> list[Analysis]:
        if not texts:
            return []
        conn = self._conn()
        tokens: list[list[tuple[int, str]]] = [[] for _ in texts]
        conn.execute("BEGIN")
        try:
            conn.executemany(
                "INSERT INTO tok(rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)]
            )
            for term, doc, offset in conn.execute('SELECT term, doc, "offset" FROM tok_vocab'):
                tokens[doc - 1].append((offset, term))
        finally:
            conn.execute("ROLLBACK")
        out: list[Analysis] = []
        for found in tokens:
            found.sort()  # text order (sorting here is cheaper than an ORDER BY in the vocabulary table)
            positions: dict[str, list[int]] = {}
            for offset, term in found:
                positions.setdefault(term, []).append(offset + 1)
            out.append((positions, len(found)))
        return out
