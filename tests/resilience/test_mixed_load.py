"""Eight processes mix remember / revise / forget / recall / checkpoint on the same few facts for 30 s, on
both backends, and nothing forks: every revision that succeeded retired exactly the facts it names, with
its own id; the losers of races got ``Conflict`` or ``NotFound`` and changed nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.store import open_store
from resilience.conftest import record
from support.env import hermetic_env

pytestmark = [pytest.mark.resilience, pytest.mark.timeout(240)]

PROCESSES = 8
SECONDS = 30.0

WORKER = """
import json, random, sys, time
from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.errors import Conflict, NotFound
from graymatter.store import open_store

location, seed, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(seed)
memory = Memory(store=open_store(location), config=MemoryConfig(), embedder=None, summariser=None)
counts = dict.fromkeys(["remember", "revise", "forget", "recall", "checkpoint", "conflict", "not_found"], 0)
revisions, errors = [], []
deadline = time.monotonic() + seconds
n = 0
while time.monotonic() < deadline:
    n += 1
    topic = f"topic{rng.randrange(4)}"
    live = [f.text for f in memory.list("mixed", include_superseded=False) if f.text.startswith(topic + " ")]
    op = rng.choices(["revise", "remember", "forget", "recall", "checkpoint"], [6, 2, 1, 3, 1])[0]
    try:
        if op == "remember" or not live and op in ("revise", "forget"):
            memory.remember("mixed", f"{topic} v{seed}.{n}")
            op = "remember"
        elif op == "revise":
            revision = memory.revise("mixed", live[0], f"{topic} v{seed}.{n}")
            revisions.append([revision.fact.id, revision.superseded_ids])
        elif op == "forget":
            memory.forget("mixed", live[0])
        elif op == "recall":
            memory.recall("mixed", topic)
        else:
            memory.checkpoint_save("mixed", {"worker": seed, "n": n})
            memory.checkpoint_latest("mixed")
        counts[op] += 1
    except Conflict:
        counts["conflict"] += 1
    except NotFound:
        counts["not_found"] += 1
    except Exception as exc:
        errors.append(f"{op}: {type(exc).__name__}: {exc}")
memory.close()
print(json.dumps({"counts": counts, "revisions": revisions, "errors": errors}))
"""


def _forks(location: str, revisions: list[list[object]]) -> int:
    """Successful revisions whose targets are not all retired by exactly that revision."""
    memory = Memory(store=open_store(location), config=MemoryConfig(), embedder=None, summariser=None)
    try:
        forks = 0
        for fact_id, superseded in revisions:
            assert isinstance(superseded, list)
            retired = memory.store.get_facts([str(i) for i in superseded])
            whole = bool(superseded) and len(retired) == len(superseded)
            if not whole or any(f.superseded_by != fact_id for f in retired):
                forks += 1
        return forks
    finally:
        memory.close()


def test_eight_mixed_writers_never_fork_a_fact(location: str, request: pytest.FixtureRequest) -> None:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, location, str(seed), str(SECONDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hermetic_env(),
            text=True,
        )
        for seed in range(PROCESSES)
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=SECONDS + 120)
        assert worker.returncode == 0, err[-2000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    totals: dict[str, int] = {}
    for report in reports:
        for key, value in report["counts"].items():
            totals[key] = totals.get(key, 0) + value
    revisions = [r for report in reports for r in report["revisions"]]
    errors = [e for report in reports for e in report["errors"]]
    forks = _forks(location, revisions)
    record(request.node.name, processes=PROCESSES, seconds=SECONDS, forks=forks, errors=len(errors), **totals)
    assert errors == []
    assert totals["revise"] > 0 and totals["conflict"] + totals["not_found"] > 0  # the races really happened
    assert forks == 0
