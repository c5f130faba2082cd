"""Many processes share one store with no daemon: writers and readers run at once, nothing is lost, and no
lock error ever reaches a caller. Real subprocesses, real SQLite file."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from graymatter import Memory
from graymatter.config import MemoryConfig
from support.env import hermetic_env

WRITERS = 8
FACTS_PER_WRITER = 250

WRITER = """
import sys
from graymatter import Memory
from graymatter.config import MemoryConfig
index = int(sys.argv[2])
with Memory(sys.argv[1], config=MemoryConfig(), embedder=None, summariser=None) as memory:
    for i in range(int(sys.argv[3])):
        memory.remember(f"agent-{index % 3}", f"writer {index} fact {i} about topic {i % 17}")
print("ok")
"""

READER = r"""
import json, re, sys, time
from pathlib import Path
from graymatter import Memory
from graymatter.config import MemoryConfig
stop = Path(sys.argv[2])
count = nonempty = 0
bad = []
shape = re.compile(r"writer (\d+) fact (\d+) about topic (\d+)")
with Memory(sys.argv[1], config=MemoryConfig(), embedder=None, summariser=None) as memory:
    while not stop.exists() or count < 5:
        for n, agent in enumerate(("agent-0", "agent-1", "agent-2")):
            hits = memory.recall(agent, f"topic {count % 17} writer fact")
            nonempty += bool(hits)
            if len({h.id for h in hits}) != len(hits):
                bad.append(f"duplicate hits for {agent}")
            for hit in hits:  # only whole facts of this agent: written by the writers with index % 3 == n
                m = shape.fullmatch(hit.text)
                if hit.agent_id != agent or not m or int(m[1]) % 3 != n or int(m[2]) % 17 != int(m[3]):
                    bad.append(f"{agent} got {hit.agent_id}: {hit.text!r}")
            count += 1
        time.sleep(0.01)
print(json.dumps({"count": count, "nonempty": nonempty, "bad": bad[:5]}))
"""


def test_eight_writers_and_concurrent_readers_lose_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # Create the schema once and make the three agents known without adding a fact: the CLI recalls below
    # may run before any writer stored one, and a CLI read of an unknown agent is an error (exit 3).
    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        for agent in ("agent-0", "agent-1", "agent-2"):
            memory.checkpoint_save(agent, {"seeded": True})
    stop = tmp_path / "stop"
    env = hermetic_env()
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(store), str(stop)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store), str(i), str(FACTS_PER_WRITER)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(WRITERS)
    ]
    cli_recalls = []
    for _ in range(3):  # hook-style CLI processes recalling while the writers run
        cli_recalls.append(
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "graymatter",
                    "--dir",
                    str(store),
                    "--json",
                    "recall",
                    "agent-1",
                    "topic 3",
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        )
        time.sleep(0.2)
    outcomes = [(*w.communicate(timeout=180), w.returncode) for w in writers]
    stop.touch()
    read_outcomes = [(*r.communicate(timeout=60), r.returncode) for r in readers]

    for out, err, code in outcomes:
        assert (code, out.strip(), err) == (0, "ok", "")
    for out, err, code in read_outcomes:
        assert code == 0 and err == "", err
        report = json.loads(out)
        assert report["count"] >= 5 and report["nonempty"] > 0  # recalls found the facts being written
        assert report["bad"] == []  # every hit was a whole fact of the agent asked about
    for result in cli_recalls:
        assert result.returncode == 0 and result.stderr == ""
        hits = json.loads(result.stdout)
        assert isinstance(hits, list)
        assert all(h["agent_id"] == "agent-1" and h["text"].startswith("writer ") for h in hits)

    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        texts = [f.text for agent in ("agent-0", "agent-1", "agent-2") for f in memory.list(agent)]
    expected = {
        f"writer {w} fact {i} about topic {i % 17}" for w in range(WRITERS) for i in range(FACTS_PER_WRITER)
    }
    assert len(texts) == WRITERS * FACTS_PER_WRITER
    assert set(texts) == expected
