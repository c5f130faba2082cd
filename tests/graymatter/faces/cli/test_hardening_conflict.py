"""The loser of a concurrent revise, through the CLI (exit code 4) and MCP (a tool error): nothing changes.

The race is made deterministic with the real database: this test holds SQLite's write lock, the revise
reads its live target and then waits for the lock, the test retires that target itself and commits, and
the revise's compare-and-swap finds it gone. A revise that started only after the commit finds no target
at all (exit 3 / "not found"), so a trial is repeated until the race was really won by the test, each
trial holding the lock twice as long as the one before (a loaded machine can take seconds to start the
revise's process).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graymatter.engine.memory import Memory
from graymatter.faces.cli.exit_codes import EXIT_CONFLICT, EXIT_NOT_FOUND
from support.env import hermetic_env
from support.mcp_session import Session, run

HOLD_S = 3.0  # how long the other writer keeps the lock in a first trial before retiring the target


def _hold_s(trial: int) -> float:
    """How long trial ``trial`` holds the lock: HOLD_S, then twice as long each time."""
    return HOLD_S * 2**trial


def _other_writer(database: Path, text: str, holding: threading.Event, hold_s: float) -> None:
    """Hold the write lock for ``hold_s``, then retire ``text`` (as another process's revise would)."""
    conn = sqlite3.connect(database, isolation_level=None, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    holding.set()
    time.sleep(hold_s)
    conn.execute("UPDATE facts SET superseded_by = '01JTESTOTHERWRITERWASFIRST0' WHERE text = ?", (text,))
    conn.execute("COMMIT")
    conn.close()


def _race(store: Path, text: str, hold_s: float, revise: Callable[[], Any]) -> Any:
    holding = threading.Event()
    other = threading.Thread(target=_other_writer, args=(store / "graymatter.db", text, holding, hold_s))
    other.start()
    holding.wait(30)
    try:
        return revise()
    finally:
        other.join(60)


def _live_texts(store: Path) -> list[str]:
    with Memory(store, embedder=None, summariser=None) as memory:
        return sorted(f.text for f in memory.list("race", include_superseded=False))


def test_the_cli_loser_exits_4_and_changes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    codes = []
    for trial in range(4):
        old = f"the cache is redis {trial}"
        with Memory(store, embedder=None, summariser=None) as memory:
            memory.remember("race", old)
        proc = _race(
            store,
            old,
            _hold_s(trial),
            lambda old=old: subprocess.run(
                [sys.executable, "-m", "graymatter", "--dir", str(store), "revise", "race", old, old + " v2"],
                capture_output=True,
                text=True,
                timeout=120,
                env=hermetic_env(),
            ),
        )
        codes.append(proc.returncode)
        if proc.returncode == EXIT_CONFLICT:
            assert proc.stderr.strip() == (
                "graymatter: error: the fact was revised or forgotten by another writer meanwhile; "
                "nothing was changed"
            )
            break
    assert codes[-1] == EXIT_CONFLICT, codes
    assert set(codes) <= {EXIT_CONFLICT, EXIT_NOT_FOUND}
    assert not [t for t in _live_texts(store) if t.endswith(" v2")]  # the loser stored nothing


def test_the_mcp_loser_gets_a_tool_error_and_changes_nothing(tmp_path: Path) -> None:
    from mcp import Client

    from graymatter.faces.mcp_server.server import build_server

    store = tmp_path / "store"
    memory = Memory(store, embedder=None, summariser=None)
    texts: list[str] = []
    try:
        for trial in range(4):
            old = f"the queue is kafka {trial}"
            memory.remember("race", old)

            async def body(session: Session, old: str = old, hold_s: float = _hold_s(trial)) -> None:
                arguments = {"agent_id": "race", "action": "update", "target": old, "text": old + " v2"}
                texts.append(
                    await _race_async(store, old, hold_s, lambda: session.error("memory_reflect", arguments))
                )

            run(lambda: Client(build_server(memory), mode="legacy"), body)
            if "another writer" in texts[-1]:
                break
    finally:
        memory.close()
    assert texts[-1] == (
        "memory reflect error: the fact was revised or forgotten by another writer meanwhile; "
        "nothing was changed"
    ), texts
    assert not [t for t in _live_texts(store) if t.endswith(" v2")]


async def _race_async(store: Path, text: str, hold_s: float, call: Callable[[], Any]) -> str:
    import anyio

    holding = threading.Event()
    other = threading.Thread(target=_other_writer, args=(store / "graymatter.db", text, holding, hold_s))
    other.start()
    await anyio.to_thread.run_sync(holding.wait, 30)
    try:
        result = await call()
        assert isinstance(result, str)
        return result
    finally:
        await anyio.to_thread.run_sync(other.join, 60)
