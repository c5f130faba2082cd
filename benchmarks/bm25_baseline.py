"""Reference baseline re-measured in the same run: plain SQLite FTS5 BM25 (porter stemming, stop-words out).

This mirrors the reference figure quoted for LoCoMo (hit@10 0.671 / MRR 0.453 on all ten
conversations) so graymatter's numbers are compared with a baseline measured on this machine and
this data, not only with a number from elsewhere. It is independent of graymatter's code.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

# The classic English stop-word list (NLTK's 179 words), the usual choice for a BM25 baseline.
_STOP_WORDS_TEXT = """
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves
he him his himself she she's her hers herself it it's its itself they them their theirs themselves
what which who whom this that that'll these those am is are was were be been being have has had
having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over
under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't should should've now
d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't
wasn wasn't weren weren't won won't wouldn wouldn't
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)


class BM25Index:
    """An in-memory FTS5 table over a list of documents, queried with OR of the non-stop-word terms."""

    def __init__(self, documents: Sequence[str]) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
        self._db.executemany("INSERT INTO docs(rowid, body) VALUES (?, ?)", enumerate(documents))

    def search(self, query: str, limit: int) -> list[int]:
        """Return document indexes ranked by BM25 (best first); ties by index."""
        terms = []
        for word in _WORD.findall(query.lower()):
            if word not in STOP_WORDS and word not in terms:
                terms.append(word)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self._db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?", (match, limit)
        )
        return [row[0] for row in rows]

    def close(self) -> None:
        self._db.close()
