"""Document frequencies stay exact while a store remembers them: every write, from any connection, counts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.store.sqlite import SQLiteStore
from graymatter.store.sqlite.schema import DB_FILENAME

WORDS = ["alpha", "beta", "gamma", "delta", "nothing"]


def _truth(directory: Path) -> dict[str, int]:
    """The counts of a store that has remembered nothing yet (a new instance)."""
    with SQLiteStore(directory) as fresh:
        return fresh.document_frequencies(WORDS)


def test_counts_follow_writes_of_this_store_of_another_and_of_plain_sql(tmp_path: Path) -> None:
    directory = tmp_path / "s"
    with Memory(directory, config=MemoryConfig(), embedder=None, summariser=None) as memory:
        store = memory.store
        memory.remember_many("a", ["alpha beta", "alpha gamma", "alpha"])
        assert store.document_frequencies(WORDS) == {
            "alpha": 3,
            "beta": 1,
            "gamma": 1,
            "delta": 0,
            "nothing": 0,
        }
        assert store.document_frequencies(WORDS) == _truth(directory)  # answered from memory, still exact
        memory.forget("a", "alpha")
        assert store.document_frequencies(WORDS)["alpha"] == 2
        memory.revise("a", "alpha gamma", "delta gamma")
        assert store.document_frequencies(WORDS) == {
            "alpha": 1,
            "beta": 1,
            "gamma": 1,
            "delta": 1,
            "nothing": 0,
        }
        with Memory(directory, config=MemoryConfig(), embedder=None, summariser=None) as other:
            other.remember_many("b", ["beta", "beta gamma"])
        assert store.document_frequencies(WORDS) == {
            "alpha": 1,
            "beta": 3,
            "gamma": 2,
            "delta": 1,
            "nothing": 0,
        }
        with sqlite3.connect(directory / DB_FILENAME) as conn:
            conn.execute("UPDATE facts SET superseded_by = 'x' WHERE text = 'beta'")
        conn.close()
        assert store.document_frequencies(WORDS) == _truth(directory)
        assert store.document_frequencies(WORDS)["beta"] == 2
        assert store.delete_facts([f.id for f in memory.list("b") if f.text == "beta gamma"])
        assert store.document_frequencies(["beta", "gamma"]) == {"beta": 1, "gamma": 1}
