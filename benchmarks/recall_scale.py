"""Cost at scale, 1k -> 100k facts (1M with ``GRAYMATTER_BENCH_1M=1``), each beside its FTS5 baseline.

Per size, in the same run and on the same texts (the seeded engineering corpus):

* **ingest**: ``Memory.remember_many`` in batches of 1,000 with background consolidation ON (the default
  configuration, keyword-only) against a plain FTS5 table (porter unicode61) filled by ``executemany`` in the
  same batches, one transaction each: facts per second, and CPU microseconds per fact (the process's
  every thread: graymatter's background consolidation counts). A step of at most ``REPEAT_STEPS_UP_TO``
  new facts (1k, 10k: tens of milliseconds, at the mercy of one scheduler hiccup) is timed in
  ``STEP_ROUNDS`` rounds, the first ones on copies of both stores as they were before the step, the two
  sides alternating which goes first; each figure is the median of its rounds.
* **bytes per fact**: the database files (WAL checkpointed) divided by the facts, both sides.
* **recall**: ``Memory.recall`` top-10 against a stop-word-free FTS5 top-10 (the query's informative words
  OR-ed, ranked by ``bm25``, ids fetched): p50 / p99 over the same natural-language queries, the two
  interleaved query by query (alternating which goes first), so a change of the host's speed during the
  run reaches both sides alike.
* **import** (up to 100k): the store exported and imported into an empty one (``import_bundle`` of the
  JSON text) against the same texts inserted into an empty FTS5 table in one transaction; up to
  ``REPEAT_STEPS_UP_TO`` facts, the median of ``IMPORT_ROUNDS`` rounds.
* **consolidation cycle**: one ``Memory.consolidate`` on the freshly written store (median of 3) against
  what the previous cycle started with, reading every fact of the agent (``list_facts``).

Machine load is printed and stored; ratios (graymatter / baseline) are the figures to compare.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.bm25_baseline import STOP_WORDS
from benchmarks.corpus import generate_facts, generate_queries, iter_batches
from benchmarks.harness import cache_dir, latency_summary, print_table, time_calls

AGENT = "scale-agent"
SIZES = (1_000, 10_000, 100_000)
SIZES_QUICK = (1_000, 5_000)
MILLION_ENV = "GRAYMATTER_BENCH_1M"
QUERIES = 300
QUERIES_QUICK = 60
WARMUP = 20
BATCH = 1_000
REPEAT_STEPS_UP_TO = 10_000
"""Growth steps and imports of at most this many facts are timed in several rounds (their median)."""
STEP_ROUNDS = 5
IMPORT_ROUNDS = 3


def _memory(directory: Path) -> Any:
    from graymatter import Memory
    from graymatter.config import MemoryConfig

    return Memory(directory, config=MemoryConfig(), embedder=None, summariser=None)


def _dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


def _grow_graymatter(directory: Path, texts: list[str]) -> tuple[float, float]:
    """Seconds and CPU seconds (every thread of the process) to append ``texts`` (consolidation on: cycles
    run in the background as writes arrive)."""
    memory = _memory(directory)
    try:
        began, cpu = time.perf_counter(), time.process_time()
        for batch in iter_batches(texts, BATCH):
            memory.remember_many(AGENT, batch)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
        memory.wait_for_background()
    finally:
        memory.close()
    _checkpoint(next(p for p in directory.iterdir() if p.suffix == ".db"))
    return elapsed, cpu


def _checkpoint(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _grow_fts(db: Path, texts: list[str]) -> tuple[float, float]:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS t USING fts5(text, tokenize='porter unicode61')")
        began, cpu = time.perf_counter(), time.process_time()
        for batch in iter_batches(texts, BATCH):
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO t(text) VALUES (?)", [(text,) for text in batch])
            conn.execute("COMMIT")
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return elapsed, cpu


SEARCH_FTS = "SELECT rowid, text FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"


def _fts_query(conn: sqlite3.Connection) -> Any:
    """FTS5's top-10 for a query: its informative words (no stop words) OR-ed, ranked by ``bm25``."""

    def one(query: str) -> None:
        words = [w for w in dict.fromkeys(query.lower().replace("?", " ").split()) if w not in STOP_WORDS]
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words if w.isalnum()) or '"x"'
        conn.execute(SEARCH_FTS, (match,)).fetchall()

    return one


def _summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    """Wall latencies (p50, p99, ...) plus the calling thread's CPU time per call (``cpu_p50_ms`` /
    ``cpu_p99_ms``: what a shared, loaded machine inflates least)."""
    summary = latency_summary(walls)
    cpu_ms = latency_summary(cpus)
    summary["cpu_p50_ms"], summary["cpu_p99_ms"] = cpu_ms["p50_ms"], cpu_ms["p99_ms"]
    return summary


def paired_latencies(calls: tuple[Any, Any], queries: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """Latencies of two ``call(query)`` functions over the same queries, interleaved query by query: the
    first call goes first on even queries, the second on odd ones. Each side after :data:`WARMUP` queries
    of its own."""
    for call in calls:
        for query in queries[:WARMUP]:
            call(query)
    walls: tuple[list[float], list[float]] = ([], [])
    cpus: tuple[list[float], list[float]] = ([], [])
    for i, query in enumerate(queries):
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            began, cpu = time.perf_counter(), time.thread_time()
            calls[side](query)
            walls[side].append(time.perf_counter() - began)
            cpus[side].append(time.thread_time() - cpu)
    return _summary(walls[0], cpus[0]), _summary(walls[1], cpus[1])


def _recalls(directory: Path, db: Path, queries: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """graymatter's recall top-10 and FTS5's, interleaved (:func:`paired_latencies`)."""
    memory = _memory(directory)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        recall = lambda query: memory.recall(AGENT, query, top_k=10)  # noqa: E731
        return paired_latencies((recall, _fts_query(conn)), queries)
    finally:
        conn.close()
        memory.close()


READ_ALL_UP_TO = 100_000
"""Reading every fact (what a cycle used to start with) is timed only up to this size: at 1M it holds
every fact in memory at once (gigabytes) to show a cost the cycle no longer has."""


IMPORT_UP_TO = 100_000
"""``graymatter import`` is timed only up to this size (at 1M the bundle and its models are gigabytes)."""


Timing = tuple[float, float]
"""Seconds and CPU seconds of one timed call."""


def _in_turn(round_: int, gm: Callable[[], Timing], fts: Callable[[], Timing]) -> tuple[Timing, Timing]:
    """Both sides of one round, graymatter first in even rounds and FTS5 first in odd ones."""
    if round_ % 2 == 0:
        first = gm()
        return first, fts()
    second = fts()
    return gm(), second


def _import_gm(work: Path, bundle: str, size: int) -> tuple[float, float]:
    """Seconds and CPU seconds of ``import_bundle`` of the JSON text into an empty store."""
    target = _memory(work / "import")
    try:
        began, cpu = time.perf_counter(), time.process_time()
        report = target.import_bundle(bundle)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        target.close()
    assert report.facts_added == size, report
    shutil.rmtree(work / "import")
    return elapsed, cpu


def _import_fts(work: Path, texts: list[str]) -> tuple[float, float]:
    """Seconds and CPU seconds of the same texts inserted into an empty FTS5 table in one transaction."""
    conn = sqlite3.connect(work / "import-fts.db", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
        began, cpu = time.perf_counter(), time.process_time()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t(text) VALUES (?)", [(text,) for text in texts])
        conn.execute("COMMIT")
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        conn.close()
    for path in work.glob("import-fts.db*"):
        path.unlink()
    return elapsed, cpu


def _import(work: Path, size: int) -> dict[str, float] | None:
    """Export the store and import it into an empty one (``import_bundle`` of the JSON text: parsing,
    validation, one transaction) against the same texts inserted into an empty FTS5 table in one
    transaction: facts per second and CPU microseconds per fact, both sides (medians of
    :data:`IMPORT_ROUNDS` rounds up to :data:`REPEAT_STEPS_UP_TO` facts, the sides alternating first)."""
    if size > IMPORT_UP_TO:
        return None
    memory = _memory(work / "gm")
    try:
        bundle = memory.export().model_dump_json()
    finally:
        memory.close()
    texts = [fact["text"] for fact in json.loads(bundle)["facts"]]
    rounds = IMPORT_ROUNDS if size <= REPEAT_STEPS_UP_TO else 1
    gm: list[Timing] = []
    fts: list[Timing] = []
    for round_ in range(rounds):
        gm_round, fts_round = _in_turn(
            round_, partial(_import_gm, work, bundle, size), partial(_import_fts, work, texts)
        )
        gm.append(gm_round)
        fts.append(fts_round)
    return {
        "facts_per_s": round(size / statistics.median(s for s, _ in gm)),
        "fts_facts_per_s": round(size / statistics.median(s for s, _ in fts)),
        "cpu_us_per_fact": round(statistics.median(c for _, c in gm) / size * 1e6, 2),
        "fts_cpu_us_per_fact": round(statistics.median(c for _, c in fts) / size * 1e6, 2),
        "rounds": rounds,
    }


def _cycles(directory: Path, size: int) -> tuple[float, float | None]:
    """Median seconds of one consolidation cycle, and of reading every fact of the agent (the old start)."""
    memory = _memory(directory)
    try:
        cycle = statistics.median(time_calls(lambda: memory.consolidate(AGENT), 3))
        full = None
        if size <= READ_ALL_UP_TO:
            full = statistics.median(time_calls(lambda: memory.store.list_facts(AGENT), 3))
    finally:
        memory.close()
    return cycle, full


def _ingest_step(work: Path, new: list[str]) -> tuple[float, float, float, float, int]:
    """Grow both stores (``work/gm``, ``work/fts.db``) by ``new``: seconds and CPU seconds of each side,
    and the rounds timed. A step of at most :data:`REPEAT_STEPS_UP_TO` facts is timed :data:`STEP_ROUNDS`
    times: first on copies of both stores as they are now (then dropped), last on the stores themselves,
    the sides alternating which goes first; each figure is the median of its rounds."""
    rounds = STEP_ROUNDS if len(new) <= REPEAT_STEPS_UP_TO else 1
    samples: list[tuple[float, float, float, float]] = []
    for round_ in range(rounds):
        last = round_ == rounds - 1
        gm_dir, fts_db = (work / "gm", work / "fts.db") if last else _scratch_copies(work)
        (gm_s, gm_cpu), (fts_s, fts_cpu) = _in_turn(
            round_, partial(_grow_graymatter, gm_dir, new), partial(_grow_fts, fts_db, new)
        )
        samples.append((gm_s, gm_cpu, fts_s, fts_cpu))
        if not last:
            shutil.rmtree(gm_dir)
            for path in work.glob(fts_db.name + "*"):
                path.unlink()
    gm_s, gm_cpu, fts_s, fts_cpu = (statistics.median(sample[i] for sample in samples) for i in range(4))
    return gm_s, gm_cpu, fts_s, fts_cpu, rounds


def _scratch_copies(work: Path) -> tuple[Path, Path]:
    """Copies of both stores as they are (``work/gm-round``, ``work/round-fts.db``; either may not exist
    yet: the first step starts from nothing)."""
    gm_dir, fts_db = work / "gm-round", work / "round-fts.db"
    if (work / "gm").exists():
        shutil.copytree(work / "gm", gm_dir)
    else:
        gm_dir.mkdir()
    for path in work.glob("fts.db*"):
        shutil.copyfile(path, work / path.name.replace("fts.db", "round-fts.db"))
    return gm_dir, fts_db


def _measure(
    size: int, texts: list[str], queries: list[str], work: Path, state: dict[str, Any]
) -> dict[str, Any]:
    """Grow both stores to ``size`` and measure every figure at that size."""
    new = texts[state["loaded"] : size]
    gm_s, gm_cpu, fts_s, fts_cpu, rounds = _ingest_step(work, new)
    state["loaded"] = size
    state["gm_s"] += gm_s
    state["fts_s"] += fts_s
    gm_bytes = _dir_bytes(work / "gm") / size
    fts_bytes = sum(p.stat().st_size for p in work.iterdir() if p.name.startswith("fts.db")) / size
    recall, baseline = _recalls(work / "gm", work / "fts.db", queries)
    cycle, full = _cycles(work / "gm", size)
    imported = _import(work, size)
    return {
        "facts": size,
        "ingest_facts_per_s": round(len(new) / gm_s),
        "fts_ingest_facts_per_s": round(len(new) / fts_s),
        "ingest_cpu_us_per_fact": round(gm_cpu / len(new) * 1e6, 2),
        "fts_ingest_cpu_us_per_fact": round(fts_cpu / len(new) * 1e6, 2),
        "ingest_rounds": rounds,
        "import": imported,
        "bytes_per_fact": round(gm_bytes),
        "fts_bytes_per_fact": round(fts_bytes),
        "recall": recall,
        "fts_recall": baseline,
        "consolidation_cycle_ms": round(cycle * 1000, 2),
        "read_every_fact_ms": None if full is None else round(full * 1000, 2),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def _cpu_share(r: dict[str, Any]) -> str:
    """Ingest CPU per fact beside FTS5's, and FTS5's share of graymatter's (the throughput a quiet machine
    would give, less noisy than wall time on a shared one); records from before it was measured say so."""
    if "ingest_cpu_us_per_fact" not in r:
        return "not measured"
    gm, fts = r["ingest_cpu_us_per_fact"], r["fts_ingest_cpu_us_per_fact"]
    return f"{gm:.1f} / {fts:.1f} ({100 * fts / gm:.0f} %)"


def _import_cell(r: dict[str, Any]) -> str:
    """Import throughput as a share of FTS5's, with both CPU figures (or why there is none)."""
    imported = r.get("import")
    if not imported:
        return "not timed" if "import" in r else "not measured"
    share = 100 * imported["facts_per_s"] / imported["fts_facts_per_s"]
    return f"{share:.0f} % ({imported['cpu_us_per_fact']:.1f} / {imported['fts_cpu_us_per_fact']:.1f})"


def _cpu_ratio(r: dict[str, Any]) -> str:
    """Recall's CPU time per call beside FTS5's (records written before it was measured say so)."""
    gm, fts = r["recall"], r["fts_recall"]
    if "cpu_p50_ms" not in gm:
        return "not measured"
    return f"{gm['cpu_p50_ms']:.2f} / {gm['cpu_p99_ms']:.2f} ({gm['cpu_p50_ms'] / fts['cpu_p50_ms']:.2f}x)"


def _row(r: dict[str, Any]) -> list[object]:
    return [
        r["facts"],
        f"{r['recall']['p50_ms']:.2f} / {r['recall']['p99_ms']:.2f}",
        f"{r['fts_recall']['p50_ms']:.2f} / {r['fts_recall']['p99_ms']:.2f}",
        f"{r['recall']['p50_ms'] / r['fts_recall']['p50_ms']:.2f}x",
        _cpu_ratio(r),
        f"{r['ingest_facts_per_s']:,} / {r['fts_ingest_facts_per_s']:,}",
        f"{100 * r['ingest_facts_per_s'] / r['fts_ingest_facts_per_s']:.0f} %",
        _cpu_share(r),
        _import_cell(r),
        f"{r['bytes_per_fact']} / {r['fts_bytes_per_fact']}",
        f"{r['bytes_per_fact'] / r['fts_bytes_per_fact']:.2f}x",
        f"{r['consolidation_cycle_ms']} / {r['read_every_fact_ms'] or 'not timed'}",
        r["loadavg_1m"],
    ]


def run(quick: bool) -> dict[str, Any]:
    """The curve: every size, graymatter beside FTS5, with the load average."""
    sizes = SIZES_QUICK if quick else SIZES + ((1_000_000,) if os.environ.get(MILLION_ENV) == "1" else ())
    queries = generate_queries(QUERIES_QUICK if quick else QUERIES, seed=7)
    texts = generate_facts(sizes[-1], seed=42)
    work = cache_dir() / "recall-scale"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    state: dict[str, Any] = {"loaded": 0, "gm_s": 0.0, "fts_s": 0.0}
    records = [_measure(size, texts, queries, work, state) for size in sizes]
    shutil.rmtree(work, ignore_errors=True)
    table = print_table(
        f"Cost at scale: graymatter (default config, keyword-only) beside FTS5, {len(queries)} queries",
        ["facts", "recall p50 / p99 ms", "FTS5 top-10 p50 / p99 ms", "recall/FTS5 p50",
         "recall CPU p50 / p99 ms (ratio p50)", "ingest facts/s (gm / FTS5)", "ingest vs FTS5",
         "ingest CPU us/fact (gm / FTS5)", "import vs FTS5 (CPU us/fact gm / FTS5)",
         "bytes/fact (gm / FTS5)", "bytes ratio",
         "cycle ms / read-all ms", "load 1m"],
        [_row(r) for r in records],
    )  # fmt: skip
    return {
        "sizes": list(sizes),
        "million_included": 1_000_000 in sizes,
        "million_how": f"set {MILLION_ENV}=1 to add the 1M step",
        "records": records,
        "table": table,
    }
