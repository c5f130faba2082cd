"""Hooks served by the warm server (ADR 0010): real hook processes, a real warm server per test.

* The same sequence of hook runs gives byte-identical stdout, stderr and exit codes, the same stored
  facts and the same dedupe state through the warm server as in-process (GRAYMATTER_MCP_WARM=0 while the
  warm server runs), routed by the client's variable from a process whose cwd is elsewhere, and by the
  process's cwd alone (so the child must adopt both).
* A broken store through the warm path: exit 0, nothing printed, one log line (served warm).
* A warm server killed with SIGKILL (a stale socket), and a socket whose server refuses the request: the
  hook runs in-process with the same output, and a new warm server is launched.
* A warm child killed in the middle of a hook: the relay prints nothing, exits 0 and logs one line.
* Empty, BOM-prefixed, oversized and broken payloads give what they give in-process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graymatter.config import MemoryConfig
from graymatter.engine.memory import Memory
from graymatter.store.sqlite.keys import AGENT_NAME
from support.env import hermetic_env
from support.warm import alive, connects, lock_pid, private_runtime, warm_server_pid, warm_socket

pytestmark = pytest.mark.timeout(180)

Logs = Callable[[Path], list[dict[str, Any]]]


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A private, short XDG_RUNTIME_DIR; the warm servers that listened in it are ended afterwards."""
    yield from private_runtime("gmh-")


def _env(runtime: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = hermetic_env(tmp_path / "state", XDG_RUNTIME_DIR=str(runtime))
    for name in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "QWEN_PROJECT_DIR"):
        env.pop(name, None)
    env.update(extra)
    return env


def _hook(
    env: dict[str, str], event: str, payload: dict[str, Any] | bytes, cwd: Path, client: str = "claude-code"
) -> subprocess.CompletedProcess[bytes]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    command = [sys.executable, "-m", "graymatter", "hook", client, event]
    return subprocess.run(command, input=data, capture_output=True, timeout=90, env=env, cwd=cwd)


def _records(store: Path) -> list[dict[str, Any]]:
    path = store / "hooks.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _seed(project: Path) -> None:
    with Memory(project / ".graymatter", config=MemoryConfig(), embedder=None, summariser=None) as memory:
        memory.remember("my-app", "the billing service stores invoices in PostgreSQL")
        memory.remember("my-app", "the job queue is RabbitMQ")
        memory.remember_shared("every service logs JSON to stdout")
        memory.checkpoint_save("my-app", {"task": "migrate invoices", "step": 3})


SEQUENCE: list[tuple[str, dict[str, Any]]] = [
    ("session-start", {"session_id": "s1", "source": "startup"}),
    ("user-prompt", {"session_id": "s1", "prompt": "which queue do the jobs use?"}),
    ("user-prompt", {"session_id": "s1", "prompt": "which queue do the jobs use?"}),  # deduped
    ("user-prompt", {"session_id": "s1", "prompt": "remember: deploys go to fly.io"}),
    ("user-prompt", {"session_id": "s1", "prompt": "where do deploys go?"}),
    ("pre-compact", {"session_id": "s1", "trigger": "auto"}),
    ("session-start", {"session_id": "s1", "source": "compact"}),
    ("session-end", {"session_id": "s1", "reason": "exit"}),
]


def _run_sequence(env: dict[str, str], project: Path, elsewhere: Path) -> list[tuple[int, bytes, bytes]]:
    """Run ``SEQUENCE`` against ``project``, routed by CLAUDE_PROJECT_DIR alone (no cwd in the payload, the
    process's own cwd ``elsewhere``), then one session-start routed by the process's cwd alone (no
    variable): a child that did not adopt the hook process's environment and cwd would miss the store."""
    routed = {**env, "CLAUDE_PROJECT_DIR": str(project)}
    results = []
    for event, payload in SEQUENCE:
        done = _hook(routed, event, payload, elsewhere)
        results.append((done.returncode, done.stdout, done.stderr))
    done = _hook(env, "session-start", {"session_id": "s2", "source": "startup"}, project)
    return [*results, (done.returncode, done.stdout, done.stderr)]


def _stored(store: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(store / "graymatter.db") as conn:
        return sorted(conn.execute(f"SELECT {AGENT_NAME.format(row='')}, text FROM facts").fetchall())


def _seen(store: Path) -> dict[str, list[str]]:
    sessions = json.loads((store / "hooks-state.json").read_text())["sessions"]
    return {sid: entry["seen"] for sid, entry in sessions.items()}


def _without_new_ids(results: list[tuple[int, bytes, bytes]]) -> list[tuple[int, bytes, bytes]]:
    """``results`` with the ids and times of what the runs themselves stored (the ``remember:`` note, the
    pre-compact checkpoint) replaced by placeholders: each store mints its own."""
    ulid = re.compile(rb"\b[0-9A-HJKMNP-TV-Z]{26}\b")
    stamp = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:\+00:00|Z)?")
    return [(code, stamp.sub(b"<time>", ulid.sub(b"<id>", out)), err) for code, out, err in results]


def test_a_hook_through_the_warm_server_prints_exactly_what_in_process_prints(
    runtime: Path, tmp_path: Path
) -> None:
    seeded = tmp_path / "seeded" / "my-app"
    (seeded / ".git").mkdir(parents=True)
    _seed(seeded)
    warm_project, cold_project = tmp_path / "warm" / "my-app", tmp_path / "cold" / "my-app"
    shutil.copytree(seeded, cold_project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = _env(runtime, tmp_path)
    for _attempt in range(5):  # the code key follows every source file: a shared tree may retire it
        warm_server_pid(runtime, env)
        shutil.rmtree(warm_project, ignore_errors=True)
        shutil.copytree(seeded, warm_project)  # byte-identical stores: same ids, same times
        warm = _run_sequence(env, warm_project, elsewhere)
        if all(r.get("served") == "warm" for r in _records(warm_project / ".graymatter")):
            break
    else:
        pytest.fail("the sequence was never served by the warm server as a whole")
    cold = _run_sequence({**env, "GRAYMATTER_MCP_WARM": "0"}, cold_project, elsewhere)
    runs = len(SEQUENCE) + 1
    assert [code for code, _out, _err in warm] == [0] * runs
    assert [warm[i] for i in (0, 1, 2, 4, 5, 7)] == [cold[i] for i in (0, 1, 2, 4, 5, 7)]  # byte for byte
    assert _without_new_ids(warm) == _without_new_ids(cold)
    assert sum(b"additionalContext" in out for _code, out, _err in warm) == 6  # the repeat injects nothing
    assert b"RabbitMQ" in warm[1][1] and warm[2][1] == b"" and b"fly.io" in warm[4][1]
    assert _stored(warm_project / ".graymatter") == _stored(cold_project / ".graymatter")
    assert _seen(warm_project / ".graymatter") == _seen(cold_project / ".graymatter")
    warm_log, cold_log = _records(warm_project / ".graymatter"), _records(cold_project / ".graymatter")
    assert [r.pop("served") for r in warm_log] == ["warm"] * runs
    assert all("served" not in r for r in cold_log)
    keys = ("client", "event", "session", "agent_id", "outcome", "chars", "tokens")
    assert [{k: r.get(k) for k in keys} for r in warm_log] == [{k: r.get(k) for k in keys} for r in cold_log]


def _served_warm(store: Path, runtime: Path, env: dict[str, str], run: Callable[[], Any]) -> Any:
    """``run()`` until the hook-log line it adds says the warm server served it (the key may move)."""
    for _attempt in range(5):
        warm_server_pid(runtime, env)
        before = len(_records(store))
        result = run()
        added = _records(store)[before:]
        if added and added[-1].get("served") == "warm":
            return result, added
    pytest.fail("never served by the warm server")


def test_a_broken_store_through_the_warm_server_prints_nothing_and_logs_one_line(
    runtime: Path, tmp_path: Path
) -> None:
    project = tmp_path / "my-app"
    (project / ".git").mkdir(parents=True)
    store = project / ".graymatter"
    store.mkdir(mode=0o700)
    (store / "graymatter.db").write_bytes(b"this is not a database" * 100)
    env = _env(runtime, tmp_path)
    for event, payload in (
        ("session-start", {"session_id": "s1", "source": "startup", "cwd": str(project)}),
        ("user-prompt", {"session_id": "s1", "prompt": "remember: sk-hidden-value", "cwd": str(project)}),
    ):
        done, added = _served_warm(store, runtime, env, lambda e=event, p=payload: _hook(env, e, p, project))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        [record] = added
        assert (record["event"], record["outcome"], record["error"], record["code"]) == (
            event,
            "error",
            "CorruptDatabase",
            "corrupt_database",
        )
    assert "sk-hidden-value" not in (store / "hooks.log").read_text()


def test_a_killed_warm_server_leaves_a_stale_socket_the_hook_survives(runtime: Path, tmp_path: Path) -> None:
    project = tmp_path / "my-app"
    (project / ".git").mkdir(parents=True)
    _seed(project)
    env = _env(runtime, tmp_path)
    payload = {"session_id": "s1", "source": "startup", "cwd": str(project)}
    expected = _hook({**env, "GRAYMATTER_MCP_WARM": "0"}, "session-start", payload, project).stdout
    assert b"additionalContext" in expected
    old = warm_server_pid(runtime, env)
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(old) and time.monotonic() < deadline:
        time.sleep(0.05)
    locks = (runtime / "graymatter").glob("*.lock")
    stale = [lock.with_suffix(".sock") for lock in locks if lock_pid(lock) == old]
    assert stale and stale[0].exists() and not connects(stale[0])
    done = _hook(env, "session-start", {**payload, "session_id": "s2"}, project)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, b"")
    assert "served" not in _records(project / ".graymatter")[-1]  # in-process
    lock = stale[0].with_suffix(".lock")
    deadline = time.monotonic() + 60
    while (lock_pid(lock) in (None, old) or not connects(stale[0])) and time.monotonic() < deadline:
        time.sleep(0.05)  # nothing here launches one: the hook did
    new = lock_pid(lock)
    assert new is not None and new != old and alive(new) and connects(stale[0])


def test_a_socket_whose_server_refuses_the_request_falls_back_in_process(
    runtime: Path, tmp_path: Path
) -> None:
    """Stands for a warm server that refuses the relay (another key, a full header): accept, then close."""
    project = tmp_path / "my-app"
    (project / ".git").mkdir(parents=True)
    _seed(project)
    env = _env(runtime, tmp_path)
    payload = {"session_id": "s1", "prompt": "which queue do the jobs use?", "cwd": str(project)}
    expected = _hook({**env, "GRAYMATTER_MCP_WARM": "0"}, "user-prompt", payload, project).stdout
    (runtime / "graymatter").mkdir(mode=0o700)
    path = warm_socket(runtime)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(8)
    listener.settimeout(60)
    accepted: list[bool] = []

    def refuse() -> None:
        conn, _ = listener.accept()
        accepted.append(True)
        conn.close()

    thread = threading.Thread(target=refuse)
    thread.start()
    try:
        done = _hook(env, "user-prompt", {**payload, "session_id": "s2"}, project)
    finally:
        thread.join(60)
        listener.close()
    assert accepted == [True]  # the relay did try this socket
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, b"")
    assert "served" not in _records(project / ".graymatter")[-1]


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().split(")")[-1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def test_a_warm_child_killed_mid_hook_prints_nothing_exits_0_and_logs_one_line(
    runtime: Path, tmp_path: Path
) -> None:
    project = tmp_path / "my-app"
    (project / ".git").mkdir(parents=True)
    _seed(project)
    store = project / ".graymatter"
    env = _env(runtime, tmp_path)
    payload = json.dumps({"session_id": "s1", "prompt": "remember: sk-hidden-note", "cwd": str(project)})
    warm = warm_server_pid(runtime, env)
    blocker = sqlite3.connect(store / "graymatter.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the hook's write now waits for the lock
    try:
        command = [sys.executable, "-m", "graymatter", "hook", "claude-code", "user-prompt"]
        pipe = subprocess.PIPE
        earlier = set(_children_of(warm))  # on a busy machine an earlier test's child may not have ended yet
        relay = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=pipe, env=env, cwd=project)
        assert relay.stdin is not None
        relay.stdin.write(payload.encode())
        relay.stdin.close()
        deadline = time.monotonic() + 30
        children: list[int] = []
        while not children and time.monotonic() < deadline and relay.poll() is None:
            children = [pid for pid in _children_of(warm) if pid not in earlier]
            time.sleep(0.01)
        assert children, "the hook was not taken by the warm server"
        os.kill(children[0], signal.SIGKILL)
        assert relay.stdout is not None and relay.stderr is not None
        out, err = relay.stdout.read(), relay.stderr.read()
        relay.wait(timeout=60)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert (relay.returncode, out, err) == (0, b"", b"")
    [record] = _records(store)
    assert (record["event"], record["outcome"], record["error"], record["code"]) == (
        "user-prompt",
        "error",
        "WarmChildLost",
        "hook_warm_lost",
    )
    assert (record["session"], record["agent_id"]) == ("s1", "my-app")
    assert "sk-hidden-note" not in (store / "hooks.log").read_text()


def test_odd_payloads_through_the_warm_server_are_read_as_in_process(runtime: Path, tmp_path: Path) -> None:
    """Empty, BOM-prefixed, oversized and broken payloads: the relay reads what the in-process hook reads."""
    project = tmp_path / "my-app"
    (project / ".git").mkdir(parents=True)
    _seed(project)
    store = project / ".graymatter"
    env = _env(runtime, tmp_path)
    payloads = [
        b"",
        b"\xef\xbb\xbf" + json.dumps({"session_id": "bom", "source": "startup"}).encode(),
        json.dumps({"prompt": "q" * (1024 * 1024)}).encode(),
        b"{broken",
    ]
    for raw in payloads:
        cold = _hook({**env, "GRAYMATTER_MCP_WARM": "0"}, "session-start", raw, project)
        (cold_line,) = _records(store)[-1:]
        warm, added = _served_warm(store, runtime, env, lambda r=raw: _hook(env, "session-start", r, project))
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
        line = added[-1]
        assert (line["outcome"], line.get("error")) == (cold_line["outcome"], cold_line.get("error"))
    outcomes = [r["outcome"] for r in _records(store) if r.get("served") == "warm"]
    assert outcomes == ["injected", "injected", "error", "error"]
