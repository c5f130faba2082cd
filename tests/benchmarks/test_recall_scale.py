"""benchmarks/recall_scale.py times what it says: recall and FTS5 interleaved query by query, small growth
steps in several rounds on copies, each store grown by a step exactly once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from benchmarks.corpus import generate_facts, generate_queries

from benchmarks import harness, recall_scale


def test_paired_latencies_interleave_the_two_sides_and_alternate_which_goes_first() -> None:
    log: list[tuple[str, str]] = []
    queries = [f"q{i}" for i in range(recall_scale.WARMUP + 6)]
    first, second = recall_scale.paired_latencies(
        (lambda q: log.append(("gm", q)), lambda q: log.append(("fts", q))), queries
    )
    warmup = 2 * recall_scale.WARMUP
    assert log[:warmup] == [("gm", q) for q in queries[: recall_scale.WARMUP]] + [
        ("fts", q) for q in queries[: recall_scale.WARMUP]
    ]
    timed = log[warmup:]
    assert len(timed) == 2 * len(queries)
    for i, query in enumerate(queries):
        pair = timed[2 * i : 2 * i + 2]
        assert {side for side, _ in pair} == {"gm", "fts"} and {q for _, q in pair} == {query}
        assert pair[0][0] == ("gm" if i % 2 == 0 else "fts")
    assert first["n"] == second["n"] == len(queries)
    assert {"p50_ms", "p99_ms", "cpu_p50_ms", "cpu_p99_ms"} <= first.keys()


def _rows(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_a_small_step_is_timed_in_rounds_on_copies_and_grows_each_store_once(tmp_path: Path) -> None:
    texts = generate_facts(70, seed=3)
    for start, end in ((0, 50), (50, 70)):
        *timings, rounds = recall_scale._ingest_step(tmp_path, texts[start:end])
        assert rounds == recall_scale.STEP_ROUNDS
        assert all(t > 0 for t in timings)
        assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("fts.db-")) == [
            "fts.db",
            "gm",
        ]  # no copy left behind
        assert _rows(tmp_path / "gm" / "graymatter.db", "facts") == end
        assert _rows(tmp_path / "fts.db", "t") == end


def test_the_quick_curve_records_every_figure_for_both_sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "_CACHE_DIR", tmp_path)  # the run's work directory, removed by pytest
    result = recall_scale.run(quick=True)
    assert [r["facts"] for r in result["records"]] == list(recall_scale.SIZES_QUICK)
    queries = len(generate_queries(recall_scale.QUERIES_QUICK, seed=7))
    for record in result["records"]:
        assert record["recall"]["n"] == record["fts_recall"]["n"] == queries
        assert record["ingest_rounds"] == recall_scale.STEP_ROUNDS
        assert record["import"]["rounds"] == recall_scale.IMPORT_ROUNDS
        assert record["bytes_per_fact"] > 0 and record["fts_bytes_per_fact"] > 0
