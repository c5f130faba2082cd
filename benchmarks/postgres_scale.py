"""PostgreSQL at scale: recall p50/p99 next to SQLite at the same sizes, round trips per recall, ingest
rate with and without vectors, bytes per fact, and mixed-load throughput of 1, 2 and 4 `graymatter serve`
processes on one database.

Recall: one store per backend holds the corpus (``benchmarks.corpus``; vectors from the deterministic
``HashingEmbedder``, 256 dimensions); the same natural-language questions are recalled top-8 after a
warm-up, keyword-only and with vectors, through ``Memory.recall`` (access bookkeeping is queued off the
answer's path). SQLite is the baseline measured in the same run, query by query in turn with
PostgreSQL, after both stores' loads are written back (a checkpoint and ``sync``) (ratio = PostgreSQL /
SQLite); "same answers" counts the questions whose top 8 came back with the same
texts and scores, in the same order, from both (both stores are loaded alike, so above about 5,000
postings a question is answered from the same posting window by both). Round
trips are counted on the wire (``tests/support/pg_roundtrips.py``: the Sync and Query messages after
which the client waits) for 50 keyword recalls of ``run_recall`` on a one-connection store.

Ingest: ``remember_many`` in batches of 2,000 (consolidation on, synchronous), keyword only, with vectors
into the live HNSW graph, and with vectors as a bulk load (graph built once at the end,
``PostgresStore.deferred_vector_index``); the embedding time of ``HashingEmbedder`` is included. Up to
100k facts the bulk load runs ``BULK_LOADS`` times per backend, alternating (median and range: one
load's rate moves with the host's other work). Beside each PostgreSQL rate: the CPU time per fact of
this process and of the server's processes (``PgCluster.cpu_seconds``), and the seconds of the load the
graph build took.
Bytes per fact: the PostgreSQL relations of the store (tables, indexes, TOAST) and the SQLite files,
divided by the number of facts, right after the load.

Sizes: ``--quick`` 2k; default 100k; 1M keyword-only with ``GRAYMATTER_BENCH_PG_1M=1`` (loading 1M facts
into both backends takes about ten minutes on 2 cores; vectors at 1M also need
``GRAYMATTER_BENCH_PG_1M_VECTORS=1``).

Throughput: a database pre-filled with 10k facts (``--quick``: 1k); N servers (N = 1, 2, 4) on 127.0.0.1,
4 client processes x 4 threads spread round-robin over the servers for a fixed time, operation mix 60%
recall, 25% remember, 10% revise, 5% checkpoint save. Baseline: the 1-server run (ratio = ops/s vs 1).
PostgreSQL runs with fsync on and ``synchronous_commit=off`` (like SQLite's WAL with
``synchronous=NORMAL``). Everything shares the machine's cores with the clients, so the scaling figure is
a floor.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.corpus import generate_facts, generate_queries, iter_batches
from benchmarks.harness import cache_dir, latency_summary, print_table

AGENT = "bench-agent"
BATCH = 2_000
BULK_LOADS = 3
"""Bulk loads with vectors per backend and size (the rate of one load moves with the host's other work)."""
REPEATED_UP_TO = 100_000
"""Larger bulk loads (1M with vectors, on request) run once."""
WARMUP = 10
TOKEN = "bench-token-0123456789abcdef"
_REPO = Path(__file__).resolve().parents[1]


def _cluster() -> Any:
    tests = str(_REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from support.pgserver import start_cluster

    return start_cluster(benchmark=True)


def _config() -> Any:
    from graymatter.config import MemoryConfig

    return MemoryConfig(async_consolidate=False)


def _embedder() -> Any:
    from graymatter.engine.embeddings import HashingEmbedder

    return HashingEmbedder(dim=256)


def _load(
    store: Any,
    texts: list[str],
    vectors: bool,
    bulk: bool = True,
    server_cpu: Callable[[], float] | None = None,
) -> dict[str, float]:
    """Write ``texts`` with ``remember_many`` (the store is closed afterwards); return the seconds it took,
    the part of them the vector graph built at the end took (a bulk load), and the CPU seconds of this
    process and of the database server (``server_cpu``: the server's running total, when there is one)."""
    from graymatter import Memory

    began, cpu = time.perf_counter(), time.process_time()
    served = server_cpu() if server_cpu is not None else 0.0
    memory = Memory(store=store, config=_config(), embedder=_embedder() if vectors else None)
    graph = 0.0
    try:
        defer = getattr(store, "deferred_vector_index", None)
        if defer is not None and vectors and bulk:
            with defer():
                for batch in iter_batches(texts, BATCH):
                    memory.remember_many(AGENT, batch)
                graph = time.perf_counter()
            graph = time.perf_counter() - graph
        else:
            for batch in iter_batches(texts, BATCH):
                memory.remember_many(AGENT, batch)
        spent = {
            "s": time.perf_counter() - began,
            "graph_s": graph,
            "cpu_s": time.process_time() - cpu,
            "server_cpu_s": server_cpu() - served if server_cpu is not None else 0.0,
        }
        analyze = getattr(store, "analyze", None)
        if analyze is not None:
            analyze()
    finally:
        memory.close()
    return spent


def _repeat_bulk(
    cluster: Any, size: int, texts: list[str], pg: dict[str, float], lite: dict[str, float]
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """The bulk load with vectors, ``BULK_LOADS`` times per backend, alternating: ``pg`` and ``lite`` are
    the loads of the stores the recall figures use, the others go to scratch targets. A load's rate moves
    with what else the host runs, so its row gives the median and the range."""
    from graymatter.store.postgres import PostgresStore
    from graymatter.store.sqlite import SQLiteStore

    pgs, lites = [pg], [lite]
    for n in range(1, BULK_LOADS):
        dsn = cluster.create_database("bulk")
        pgs.append(_load(PostgresStore(dsn, max_size=4), texts, vectors=True, server_cpu=cluster.cpu_seconds))
        cluster.drop_database(dsn)
        scratch = cache_dir() / f"pg-scale-bulk-{size}-{n}"
        lites.append(_load(SQLiteStore(scratch), texts, vectors=True))
        shutil.rmtree(scratch, ignore_errors=True)
    return pgs, lites


def _ingest_row(size: int, label: str, pgs: list[dict[str, float]], lites: list[dict[str, float]],
                pg_bytes: int, lite_bytes: int) -> list[Any]:  # fmt: skip
    """One ingest row: rates (median of the loads, and their range), bytes per fact, where the
    PostgreSQL load's CPU went (this process, the server; medians) and the graph build's seconds."""
    rates = sorted(round(size / load["s"]) for load in pgs)
    spread = f"{rates[0]:,}-{rates[-1]:,} ({len(rates)} loads)" if len(rates) > 1 else "-"
    graph = statistics.median(load["graph_s"] for load in pgs)
    cpu = (f"{statistics.median(load['cpu_s'] for load in pgs) / size * 1e6:.0f} + "
           f"{statistics.median(load['server_cpu_s'] for load in pgs) / size * 1e6:.0f}")  # fmt: skip
    return [f"{size:,}", label, statistics.median(rates), spread,
            round(statistics.median(size / load["s"] for load in lites)), pg_bytes, lite_bytes, cpu,
            round(graph, 1) if graph else "-"]  # fmt: skip


def _pg_bytes(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind = 'r' AND n.nspname = 'public' AND c.relname LIKE 'gm\\_%'"
        ).fetchone()
    return int(row[0]) if row and row[0] else 0


def _settle(dsn: str) -> None:
    """After the loads: write back what they left dirty (PostgreSQL's buffers by a checkpoint, which it
    would otherwise do in the background for minutes, and the kernel's page cache for both stores), so
    the recall figures are not taken during that write-back."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    os.sync()


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _recall_pair(open_pg: Any, open_lite: Any, queries: list[str], vectors: bool) -> list[dict[str, float]]:
    """Recall latency of both backends, interleaved query by query (the same machine state for both), and
    how many queries both answered alike (the same texts with the same scores, in the same order)."""
    from graymatter import Memory

    memories = [Memory(store=o(), config=_config(), embedder=_embedder() if vectors else None)
                for o in (open_pg, open_lite)]  # fmt: skip
    try:
        for query in queries[:WARMUP]:
            for memory in memories:
                memory.recall(AGENT, query, top_k=8)
        timings: list[list[float]] = [[], []]
        same = 0
        for query in queries:
            answers = []
            for memory, spent in zip(memories, timings, strict=True):
                began = time.perf_counter()
                hits = memory.recall(AGENT, query, top_k=8)
                spent.append(time.perf_counter() - began)
                answers.append([(hit.text, hit.score) for hit in hits])
            same += answers[0] == answers[1]
        return [*(latency_summary(spent) for spent in timings), {"identical": same, "queries": len(queries)}]
    finally:
        for memory in memories:
            memory.close()


def _round_trips(dsn: str, queries: list[str]) -> dict[str, float]:
    """Round trips per keyword recall, counted on the wire (after a warm-up that prepares statements)."""
    from graymatter.retrieval.pipeline import RecallRequest, run_recall
    from graymatter.store.postgres import PostgresStore

    tests = str(_REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from support.pg_roundtrips import RoundTripRelay

    with RoundTripRelay(dsn) as relay:
        store = PostgresStore(relay.dsn, min_size=1, max_size=1)
        try:
            requests = [RecallRequest(agent_ids=(AGENT,), query=q, top_k=8) for q in queries[:50]]
            counts = []
            for counted in (False, False, True):
                for request in requests:
                    relay.reset()
                    run_recall(store, request)
                    if counted:
                        counts.append(relay.count())
        finally:
            store.close()
    return {"mean": round(sum(counts) / len(counts), 2), "max": max(counts)}


def _ingest_rows(cluster: Any, size: int, texts: list[str], vectors: bool) -> list[list[Any]]:
    """Ingest rates and bytes per fact of fresh stores: keyword only, then with vectors into the live graph
    (at most 20k facts: every insert walks the graph)."""
    from graymatter.store.postgres import PostgresStore
    from graymatter.store.sqlite import SQLiteStore

    rows: list[list[Any]] = []
    if not vectors:  # the main load was keyword-only already
        return rows
    cases = [("keyword only", size, False), ("vectors, live graph", min(size, 20_000), True)]
    for label, n, with_vectors in cases:
        dsn = cluster.create_database("ingest")
        lite_dir = cache_dir() / f"pg-scale-ingest-{label.replace(' ', '-').replace(',', '')}-{n}"
        pg = _load(PostgresStore(dsn, max_size=4), texts[:n], vectors=with_vectors, bulk=False,
                   server_cpu=cluster.cpu_seconds)  # fmt: skip
        lite = _load(SQLiteStore(lite_dir), texts[:n], vectors=with_vectors, bulk=False)
        rows.append(
            _ingest_row(n, label, [pg], [lite], round(_pg_bytes(dsn) / n), round(_dir_bytes(lite_dir) / n))
        )
        cluster.drop_database(dsn)
    return rows


def recall_table(sizes: tuple[int, ...], queries: int, with_vectors: dict[int, bool]) -> dict[str, Any]:
    """Recall latency and round trips beside SQLite, ingest rates and bytes per fact, per size."""
    from graymatter.store.postgres import PostgresStore
    from graymatter.store.sqlite import SQLiteStore

    cluster = _cluster()
    rows, ingest, results = [], [], []
    questions = generate_queries(queries)
    for size in sizes:
        texts = generate_facts(size)
        vectors = with_vectors[size]
        dsn = cluster.create_database("bench")
        sqlite_dir = cache_dir() / f"pg-scale-sqlite-{size}"
        load_pg = _load(
            PostgresStore(dsn, max_size=4), texts, vectors=vectors, server_cpu=cluster.cpu_seconds
        )
        load_lite = _load(SQLiteStore(sqlite_dir), texts, vectors=vectors)
        pg_bytes, lite_bytes = round(_pg_bytes(dsn) / size), round(_dir_bytes(sqlite_dir) / size)
        _settle(dsn)
        trips = _round_trips(dsn, questions)
        seconds = {"postgres": round(load_pg["s"], 1), "sqlite": round(load_lite["s"], 1)}
        entry: dict[str, Any] = {"facts": size, "round_trips": trips, "load_s": seconds, "modes": {}}
        for mode in [False, True] if vectors else [False]:
            load = os.getloadavg()[0]
            pg, lite, agree = _recall_pair(
                lambda d=dsn: PostgresStore(d, max_size=4),
                lambda d=sqlite_dir: SQLiteStore(d),
                questions,
                mode,
            )
            label = "keyword + vectors" if mode else "keyword only"
            ratio50 = pg["p50_ms"] / lite["p50_ms"] if lite["p50_ms"] else None
            ratio99 = pg["p99_ms"] / lite["p99_ms"] if lite["p99_ms"] else None
            rt = f"{trips['mean']:g} (max {trips['max']})" if not mode else "-"
            alike = "-" if mode else f"{agree['identical']}/{agree['queries']}"
            rows.append([f"{size:,}", label, pg["p50_ms"], pg["p99_ms"], lite["p50_ms"], lite["p99_ms"],
                         ratio50, ratio99, rt, alike, round(load, 2)])  # fmt: skip
            entry["modes"][label] = {
                "postgres": pg,
                "sqlite": lite,
                "same_answers": agree,
                "ratio_p50": ratio50,
                "ratio_p99": ratio99,
            }
        cluster.drop_database(dsn)
        repeat = vectors and size <= REPEATED_UP_TO
        pgs, lites = (
            _repeat_bulk(cluster, size, texts, load_pg, load_lite) if repeat else ([load_pg], [load_lite])
        )
        entry["loads"] = {"postgres": pgs, "sqlite": lites}
        label = "vectors, bulk load" if vectors else "keyword only, bulk"
        ingest.append(_ingest_row(size, label, pgs, lites, pg_bytes, lite_bytes))
        ingest.extend(_ingest_rows(cluster, size, texts, vectors))
        results.append(entry)
    table = print_table(
        f"Recall latency, top-8, {queries} questions (ms; ratio = PostgreSQL / SQLite; round trips per"
        " keyword recall on the wire; same answers: questions whose top 8 have the same texts and scores on"
        " both, keyword only; 1-min load average)",
        ["facts", "signals", "pg p50", "pg p99", "sqlite p50", "sqlite p99", "p50 ratio", "p99 ratio",
         "pg round trips", "same answers", "load"],
        rows,
    )  # fmt: skip
    ingest_table = print_table(
        f"Ingest with remember_many (facts/s; the bulk load with vectors {BULK_LOADS} times per backend,"
        " alternating: median and range), bytes per fact, the PostgreSQL load's CPU per fact (this process"
        " + the server, µs) and the seconds of it the vector graph's build took"
        f" (load {os.getloadavg()[0]:.2f})",
        ["facts", "write path", "pg facts/s", "pg range", "sqlite facts/s", "pg bytes/fact",
         "sqlite bytes/fact", "pg cpu µs/fact", "graph build s"],
        ingest,
    )  # fmt: skip
    return {"tables": [table, ingest_table], "results": results, "ingest": ingest}


# --------------------------------------------------------------------------------------------- load


def _start_server(dsn: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "serve.log"
    args = [sys.executable, "-m", "graymatter", "--dir", str(workdir / "data"), "serve", "--store", dsn,
            "--http", "127.0.0.1:0", "--rate-limit", "0", "--token", TOKEN]  # fmt: skip
    env = {**os.environ, "GRAYMATTER_EMBEDDINGS": "keyword"}
    with open(log, "wb") as handle:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=handle, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "serving REST + MCP on " in text:
            url = text.split("serving REST + MCP on ", 1)[1].split()[0]
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    return process, url
            except httpx.HTTPError:
                pass
        if process.poll() is not None:
            raise RuntimeError(f"graymatter serve exited: {text[-500:]}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("graymatter serve did not start")


def _client_process(args: tuple[list[str], float, int, int]) -> dict[str, Any]:
    """One client process: threads issuing the operation mix until the deadline."""
    import httpx

    urls, seconds, threads, seed = args
    questions = generate_queries(200, seed=seed)
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(n: int) -> None:
        rng = random.Random(seed * 100 + n)
        agent = f"load-{seed}-{n}"
        mine: list[str] = []
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(headers=headers, timeout=30) as client:
            i = 0
            while time.monotonic() < deadline:
                url = urls[(n + i) % len(urls)]
                i += 1
                roll = rng.random()
                began = time.perf_counter()
                try:
                    if roll < 0.60:
                        query = {"agent_id": AGENT, "q": rng.choice(questions)}
                        response = client.get(url + "/recall", params=query)
                    elif roll < 0.85 or not mine:
                        text = f"load fact {seed} {n} {i} about {rng.choice(questions)}"
                        response = client.post(url + "/remember", json={"agent_id": agent, "text": text})
                        if response.status_code == 201:
                            mine.append(text)
                    elif roll < 0.95:
                        old = mine.pop(rng.randrange(len(mine)))
                        new = old + " (revised)"
                        body = {"agent_id": agent, "old_text": old, "new_text": new}
                        response = client.post(url + "/revise", json=body)
                        if response.status_code == 200:
                            mine.append(new)
                    else:
                        response = client.post(
                            url + "/checkpoints", json={"agent_id": agent, "state": {"i": i}}
                        )
                    ok = response.status_code < 400
                except httpx.HTTPError:
                    ok = False
                elapsed = time.perf_counter() - began
                with lock:
                    latencies.append(elapsed)
                    if not ok:
                        errors[0] += 1

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return {"latencies": latencies, "errors": errors[0]}


def throughput_table(prefill: int, seconds: float, server_counts: tuple[int, ...]) -> dict[str, Any]:
    from graymatter.store.postgres import PostgresStore

    cluster = _cluster()
    rows = []
    results = []
    baseline = None
    texts = generate_facts(prefill)
    context = multiprocessing.get_context("spawn")
    for count in server_counts:
        dsn = cluster.create_database("load")
        _load(PostgresStore(dsn, max_size=4), texts, vectors=False)
        servers = [_start_server(dsn, cache_dir() / f"serve-{count}-{n}") for n in range(count)]
        try:
            urls = [url for _, url in servers]
            with context.Pool(4) as pool:
                outcomes = pool.map(_client_process, [(urls, seconds, 4, seed) for seed in range(4)])
        finally:
            for process, _ in servers:
                process.terminate()
            for process, _ in servers:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
        latencies = [x for o in outcomes for x in o["latencies"]]
        errors = sum(o["errors"] for o in outcomes)
        ops = len(latencies) / seconds
        baseline = baseline or ops
        summary = latency_summary(latencies)
        rows.append(
            [count, round(ops, 1), round(ops / baseline, 2), summary["p50_ms"], summary["p99_ms"], errors]
        )
        results.append({"servers": count, "ops_per_s": round(ops, 1), "ratio_vs_1": round(ops / baseline, 3),
                        "latency": summary, "errors": errors, "operations": len(latencies)})  # fmt: skip
        cluster.drop_database(dsn)
    table = print_table(
        f"Mixed load on one PostgreSQL ({prefill:,} facts, 16 clients, {seconds:.0f} s per run)",
        ["servers", "ops/s", "vs 1 server", "p50 ms", "p99 ms", "errors"],
        rows,
    )
    return {"table": table, "results": results}


def run(quick: bool) -> dict[str, Any]:
    """Entry point for ``python -m benchmarks postgres_scale``."""
    if quick:
        sizes: tuple[int, ...] = (2_000,)
        vectors = {2_000: True}
    else:
        sizes = (100_000,)
        vectors = {100_000: True}
        if os.environ.get("GRAYMATTER_BENCH_PG_1M") == "1":
            sizes = (100_000, 1_000_000)
            vectors[1_000_000] = os.environ.get("GRAYMATTER_BENCH_PG_1M_VECTORS") == "1"
    recall = recall_table(sizes, 40 if quick else 200, vectors)
    load = throughput_table(1_000 if quick else 10_000, 3.0 if quick else 10.0, (1, 2, 4))
    return {"tables": [*recall["tables"], load["table"]], "recall": recall, "throughput": load,
            "sizes": list(sizes), "one_million_included": 1_000_000 in sizes}  # fmt: skip
