"""`graymatter migrate`: SQLite -> PostgreSQL -> SQLite, verified counts and checksums, lossless."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graymatter import Memory
from graymatter.engine.access import TokenService
from graymatter.store import open_store
from graymatter.store.sqlite.tokens import SQLiteTokenStore
from support.env import hermetic_env

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def gm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graymatter", *args], capture_output=True, text=True,
                          timeout=120,
                          env=hermetic_env())  # fmt: skip


def test_round_trip_sqlite_postgres_sqlite(pg_dsn: str, tmp_path: Path) -> None:
    source = tmp_path / "src"
    with Memory(source, embedder=None) as memory:
        for i in range(120):
            memory.remember(f"agent-{i % 3}", f"fact number {i} about topic {i % 7}", confidence="verified")
        memory.revise("agent-0", "fact number 0 about topic 0", "fact zero, corrected")
        memory.forget("agent-1", "fact number 1 about topic 1")
        memory.pin("agent-2", "fact number 2 about topic 2")
        memory.alias("agent-0", "db", ["database"])
        memory.link("agent-0", "Alice", "Project X", "works_on")
        memory.checkpoint_save(
            "agent-0", {"step": 1, "nested": {"k": [1, 2.5, "é"]}}, messages=[{"role": "user"}]
        )
        recall_before = [h.id for h in memory.recall("agent-0", "topic 3 fact")]
        before = memory.export().model_dump(mode="json", exclude={"exported_at"})
    TokenService(SQLiteTokenStore(source)).create(["agent-0"], read_only=True, label="ro")

    done = gm("migrate", "--from", str(source), "--to", pg_dsn, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["verified"] is True
    counts = {k["kind"]: k["target_count"] for k in report["kinds"]}
    assert counts == {"facts": 122, "checkpoints": 1, "links": 1, "tokens": 1}

    with Memory(store=open_store(pg_dsn), embedder=None) as pg_memory:
        assert pg_memory.export().model_dump(mode="json", exclude={"exported_at"}) == before
        assert [h.id for h in pg_memory.recall("agent-0", "topic 3 fact")] == recall_before

    again = gm("migrate", "--from", str(source), "--to", pg_dsn)
    assert again.returncode == 2 and "not empty" in again.stderr

    back = tmp_path / "back"
    done = gm("migrate", "--from", pg_dsn, "--to", str(back), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"] is True
    with Memory(back, embedder=None) as memory:
        exported = memory.export().model_dump(mode="json", exclude={"exported_at"})
    # Access bookkeeping of the recall on PostgreSQL travelled too; everything else is identical.
    strip = lambda bundle: [{k: v for k, v in f.items() if k not in ("accessed_at", "access_count")}  # noqa: E731
                            for f in bundle["facts"]]  # fmt: skip
    assert strip(exported) == strip(before)
    assert exported["checkpoints"] == before["checkpoints"] and exported["links"] == before["links"]
