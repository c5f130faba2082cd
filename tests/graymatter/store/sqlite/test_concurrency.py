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

READER = """
import sys, time
from pathlib import Path
from graymatter import Memory
from graymatter.config import MemoryConfig
stop = Path(sys.argv[2])
count = 0
with Memory(sys.argv[1], config=MemoryConfig(), embedder=None, summariser=None) as memory:
    while not stop.exists() or count < 5:
        for agent in ("agent-0", "agent-1", "agent-2"):
            memory.recall(agent, f"topic {count % 17} writer fact")
            count += 1
        time.sleep(0.01)
print(count)
"""


def test_eight_writers_and_concurrent_readers_lose_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Memory(store, config=MemoryConfig(), embedder=None).close()  # create the schema once
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
        assert code == 0 and err == "" and int(out) >= 5
    for result in cli_recalls:
        assert result.returncode == 0 and result.stderr == ""
        assert isinstance(json.loads(result.stdout), list)

    with Memory(store, config=MemoryConfig(), embedder=None) as memory:
        texts = [f.text for agent in ("agent-0", "agent-1", "agent-2") for f in memory.list(agent)]
    expected = {
        f"writer {w} fact {i} about topic {i % 17}" for w in range(WRITERS) for i in range(FACTS_PER_WRITER)
    }
    assert len(texts) == WRITERS * FACTS_PER_WRITER
    assert set(texts) == expected
