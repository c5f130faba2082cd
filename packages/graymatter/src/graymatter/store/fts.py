"""The FTS5 tokenizer both backends rank with: its definition, and an in-process copy of it."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"


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

    def analyse(self, texts: Sequence[str]) -> list[tuple[dict[str, list[int]], int]]:
        """For each text: ``(stem -> 1-based token positions, number of tokens)``, stems in text order."""
        if not texts:
            return []
        conn = self._conn()
        out: list[tuple[dict[str, list[int]], int]] = [({}, 0) for _ in texts]
        totals = [0] * len(texts)
        conn.execute("BEGIN")
        try:
            conn.executemany(
                "INSERT INTO tok(rowid, t) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)]
            )
            for term, doc, offset in conn.execute(
                'SELECT term, doc, "offset" FROM tok_vocab ORDER BY doc, "offset"'
            ):
                out[doc - 1][0].setdefault(term, []).append(offset + 1)
                totals[doc - 1] += 1
        finally:
            conn.execute("ROLLBACK")
        return [(positions, total) for (positions, _), total in zip(out, totals, strict=True)]
