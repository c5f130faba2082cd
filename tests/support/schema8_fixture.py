"""Schema-8 stores written by graymatter at schema 8, and what it answered from them: the fixture that
``tests/graymatter/store/sqlite/test_schema_compact_rows.py`` checks a migrated copy against (schema 9,
docs/decisions/0011).

The committed files (``tests/graymatter/store/sqlite/data/``) were made by graymatter at schema 8 (commit
c1e0af1), from the repository root:

    PYTHONPATH=<that tree>/packages/graymatter/src:tests python -m support.schema8_fixture \
        tests/graymatter/store/sqlite/data

Two stores, each gzipped: ``schema8-keyword.db.gz`` (keyword-only: bulk and single writes, session turns in
two agents, labels, a CLI provenance, a revision, a forgotten fact, a pin, an alias, shared facts, links, a
checkpoint, an import of old facts with ids that are no ULIDs or a lower-case one, a tombstone chain, a
decay cycle, recalls that recorded accesses) and ``schema8-vectors.db.gz`` (the same kind of facts with
vectors of the deterministic hashing embedder). ``schema8-answers.json.gz`` holds the answers: every reading
method the test calls, in the order it calls them, the store's candidate searches with their scores
included (recall's own ranking, which changes with retrieval work, is compared in ADR 0011 instead).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.engine.embeddings import HashingEmbedder
from graymatter.engine.memory_core import MemoryCore

NOW = datetime(2026, 6, 1, tzinfo=UTC)
AGENTS = ("support-bot", "ops", "__shared__", "legacy")
QUERIES = (
    "when do we deploy",
    "staging database refresh",
    "payment service latency",
    "kubernetes cluster upgrade",
    "who owns the billing pipeline",
    "release train schedule",
    "incident review notes",
    "cache invalidation bug",
)
_WORDS = [
    "deploy",
    "staging",
    "database",
    "refresh",
    "payment",
    "service",
    "latency",
    "kubernetes",
    "cluster",
    "upgrade",
    "billing",
    "pipeline",
    "release",
    "train",
    "schedule",
    "incident",
    "review",
    "cache",
    "invalidation",
    "bug",
    "owner",
    "team",
    "tuesday",
    "nightly",
    "api",
    "gateway",
    "alert",
    "oncall",
    "rotation",
    "queue",
    "worker",
    "retry",
    "backoff",
    "migration",
    "schema",
    "index",
    "postgres",
    "sqlite",
    "memory",
]


def _texts(count: int, seed: int) -> list[str]:
    """Deterministic short facts from a small vocabulary (so that queries match several of them)."""
    out, state = [], seed
    for i in range(count):
        words = []
        for _ in range(5 + i % 6):
            state = (state * 1_103_515_245 + 12_345) % 2**31
            words.append(_WORDS[state % len(_WORDS)])
        out.append(f"note {i}: " + " ".join(words))
    return out


def _old_bundle() -> dict[str, Any]:
    """Facts from an older system: two months old, ids that are no ULIDs (and a lower-case ULID), a tombstone
    chain and an alias, as an export bundle."""
    at = (NOW - timedelta(days=60)).isoformat()  # two half-lives: decayed by the cycle, not pruned

    def fact(fact_id: str, text: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": fact_id,
            "agent_id": "legacy",
            "text": text,
            "created_at": at,
            "accessed_at": at,
        } | extra

    return {
        "format": "graymatter-export",
        "version": 1,
        "exported_at": NOW.isoformat(),
        "facts": [
            fact("legacy-note-1", "the old deploy happened on fridays", superseded_by="legacy-note-2"),
            fact("legacy-note-2", "the old deploy happens on mondays"),
            fact("01jtlowercaseulid000000001", "billing pipeline owned by the data team"),
            fact("01JTLEGACY0000000000000003", "cache invalidation bug in the api gateway"),
            fact("LEGACY-ALIAS", "db", kind="alias", equivalents=["database", "postgres"]),
        ],
        "checkpoints": [],
        "links": [],
    }


def _fill(memory: MemoryCore, vectors: bool) -> None:
    assert isinstance(memory, Memory)
    texts = _texts(260, seed=7 if vectors else 3)
    memory.remember_many("support-bot", texts[:150])
    for i, text in enumerate(texts[150:170]):
        memory.remember("support-bot", text, session="s1" if i % 2 else "s2")
    for i, text in enumerate(texts[170:185]):
        memory.remember("ops", text, session="s1", confidence="verified" if i % 3 == 0 else "inferred")
    memory.remember("ops", texts[185], provenance={"interface": "cli", "client": "make-fixture"})
    memory.remember_many("ops", texts[186:230], confidence="verified")
    for text in texts[230:245]:
        memory.remember_shared(text)
    memory.revise("support-bot", texts[3], texts[3] + " (revised)")
    memory.forget("support-bot", texts[4])
    memory.pin("support-bot", texts[5])
    memory.alias("support-bot", "k8s", ["kubernetes"])
    if not vectors:
        memory.link("support-bot", "billing pipeline", "payment service", "depends on")
        memory.link("ops", "staging database", "nightly refresh", "uses")
        memory.checkpoint_save("support-bot", {"step": 3, "open": ["deploy"]}, messages=[{"role": "user"}])
        memory.import_bundle(_old_bundle())
        memory.consolidate("legacy", now=NOW)
    for query in QUERIES[:3]:
        memory.recall("support-bot", query, top_k=5)
    memory.wait_for_background()


def _dump(value: Any) -> Any:
    """A model, list of models or plain value as JSON-ready data."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _dump(v) for k, v in value.items()}
    return value


def _cursor(before: tuple[datetime, str] | None) -> list[str] | None:
    return None if before is None else [before[0].isoformat(), before[1]]


def answers(memory: MemoryCore) -> dict[str, Any]:
    """Everything the test compares, read in a fixed order."""
    assert isinstance(memory, Memory)
    store = memory.store
    out: dict[str, Any] = {}
    bundle = memory.export().model_dump(mode="json")
    bundle.pop("exported_at")
    out["export"] = bundle
    out["agents"] = memory.agents()
    for agent in AGENTS:
        pages, before = [], None
        while True:
            page = store.facts_page(agent, before=before, limit=7, live=None)
            pages.append([[f.id for f in page.facts], _cursor(page.before), page.partial])
            if page.before is None:
                break
            before = page.before
        out[f"pages:{agent}"] = pages
        out[f"live:{agent}"] = [f.id for f in store.facts_page(agent, before=None, limit=500).facts]
        out[f"latest:{agent}"] = [f.id for f in store.latest_facts(agent, 12)]
        out[f"recent:{agent}"] = store.recent([agent], 30)
        stats = memory.stats(agent).model_dump(mode="json")
        out[f"stats:{agent}"] = stats
        out[f"aliases:{agent}"] = [f.id for f in memory.aliases(agent)]
        facts = store.list_facts(agent, kinds=("fact", "alias"))
        out[f"by-text:{agent}"] = [[f.id for f in store.find_by_text(agent, f.text, f.kind)] for f in facts]
        ids = [f.id for f in facts]
        out[f"neighbours:{agent}"] = store.neighbours(ids, 2)
        out[f"supersedes:{agent}"] = store.supersedes(ids)
        out[f"rank-info:{agent}"] = {k: [v[0].isoformat(), v[1]] for k, v in store.rank_info(ids).items()}
        out[f"decay-due:{agent}"] = [f.id for f in store.decay_due(agent, NOW, NOW - timedelta(hours=1), 50)]
    out.update(_searches(memory))
    return out


def _searches(memory: Memory) -> dict[str, Any]:
    """The store's candidate searches for every query: keyword matches with FTS5's scores, the newest live
    facts, vector neighbours with their similarities (a store with vectors), document frequencies. The
    store's answers, not recall's: they do not change when recall's ranking does."""
    store, out = memory.store, {}
    embedder = memory._embeddings.embedder
    for agents in (["support-bot"], ["ops"], ["legacy"], ["support-bot", "__shared__"]):
        for query in QUERIES:
            terms = query.split()
            for labels in (None, ["verified"]):
                hits = store.keyword_search(agents, terms, 25, labels)
                out[f"keyword:{agents}:{query}:{labels}"] = [[h.fact_id, h.score] for h in hits]
            if embedder is not None and memory.embedding_model is not None:
                vector = embedder.embed([query])[0]
                hits = store.vector_search(agents, vector, memory.embedding_model, 25)
                out[f"vector:{agents}:{query}"] = [[h.fact_id, h.score] for h in hits]
        out[f"recent:{agents}"] = store.recent(agents, 40, ["verified", "inferred"])
    words = sorted({word for query in QUERIES for word in query.split()})
    out["document-frequencies"] = store.document_frequencies(words)
    return out


DATA = Path(__file__).parents[1] / "graymatter" / "store" / "sqlite" / "data"
"""Where the committed stores and answers are."""


def fixture_copy(tmp_path: Path, name: str) -> Path:
    """A private copy of the committed schema-8 store ``name`` (``keyword`` or ``vectors``): its directory."""
    from graymatter.store.sqlite.schema import DB_FILENAME

    directory = tmp_path / name
    directory.mkdir(mode=0o700)
    db = directory / DB_FILENAME
    db.write_bytes(gzip.decompress((DATA / f"schema8-{name}.db.gz").read_bytes()))
    db.chmod(0o600)
    return directory


def recorded(name: str) -> Any:
    """What graymatter at schema 8 answered from the store ``name`` (:func:`answers`)."""
    return json.loads(gzip.decompress((DATA / "schema8-answers.json.gz").read_bytes()))[name]


def fixture_memory(directory: Path, name: str) -> Memory:
    """The ``Memory`` the answers were recorded with (the hashing embedder for ``vectors``)."""
    embedder = HashingEmbedder(32) if name == "vectors" else None
    return Memory(directory, config=MemoryConfig(async_consolidate=False), embedder=embedder, summariser=None)


def raw_sql(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """``sql``'s rows from the database file, on a plain connection of its own."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _write(target: Path, name: str, vectors: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp())
    embedder = HashingEmbedder(32) if vectors else None
    config = MemoryConfig(async_consolidate=False)
    with Memory(work / "s", config=config, embedder=embedder, summariser=None) as memory:
        _fill(memory, vectors)
    db = work / "s" / "graymatter.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
    conn.close()
    (target / f"{name}.db.gz").write_bytes(gzip.compress(db.read_bytes(), mtime=0))
    with Memory(work / "s", config=config, embedder=embedder, summariser=None) as memory:
        found = answers(memory)
    shutil.rmtree(work)
    return found


def main(target: Path) -> None:
    recorded = {
        "keyword": _write(target, "schema8-keyword", False),
        "vectors": _write(target, "schema8-vectors", True),
    }
    text = json.dumps(recorded, sort_keys=True, separators=(",", ":"))
    (target / "schema8-answers.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
