"""Real-client hook gate: memory a client gets without asking, through the hooks ``graymatter init`` installs.

For Claude Code, Codex and Gemini CLI (each headless at its defaults, fresh HOME, loopback-only network; Codex
with its hooks trusted, as the user does once in ``/hooks``): with a
fact and a checkpoint already stored for the project, the client's FIRST model request carries both
(SessionStart injection), and a ``remember: ...`` prompt lands in the project's store before the model
answers (read back through the graymatter CLI). Qwen Code 0.15.10 fires no SessionStart in ``-p`` mode
(only interactive, ACP, /clear, compaction), so for it the gate checks the per-prompt hook instead: the
stored fact reaches the first request as recall for a question about it, and ``remember:`` is stored.
Negative case: with the store broken, the hook prints nothing, exits 0 and writes one line to the hook log,
and the client's session still completes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gate import report
from gate.clients import CLIENTS, CODEX_HOOKS_TRUSTED, Client, Layout
from gate.session import (
    GRAYMATTER,
    graymatter,
    graymatter_env,
    register_hooks_by_hand,
    run_client,
    wire_with_init,
)

pytestmark = [pytest.mark.gate, pytest.mark.timeout(900)]

AGENT = "gateproj"
SEEDED_FACT = "The staging database is db-staging-7."
CHECKPOINT_STATE = {"task": "hook gate", "next": "ship release 4.2"}
CHECKPOINT_MARKER = "ship release 4.2"
NOTE = "The release train leaves on Thursdays."
HOOK_CLIENTS = {
    "claude-code": CLIENTS["claude-code"],
    "codex": CODEX_HOOKS_TRUSTED,
    "gemini": CLIENTS["gemini"],
}
QUESTION = "Which staging database do we use?"


def wired(name: str, tmp_path: Path) -> tuple[Client, Layout]:
    """A fresh HOME and project with graymatter wired in (MCP server and hooks)."""
    client = HOOK_CLIENTS.get(name) or CLIENTS[name]
    layout = Layout(tmp_path)
    layout.make()
    client.seed(layout)
    if os.environ.get("GATE_HAND_WIRING") == "1":  # debugging aid: isolate a client problem from init
        layout.store.mkdir(mode=0o700)
        register_hooks_by_hand(client, layout)
    else:
        wire_with_init(client, layout)
    return client, layout


def hook_log(layout: Layout) -> list[dict[str, Any]]:
    path = layout.store / "hooks.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def first_request_text(requests: list[dict[str, Any]], client: Client) -> str:
    main = client.main_requests(requests)
    return json.dumps(main[0]["body"], ensure_ascii=False) if main else ""


@pytest.mark.parametrize("name", list(HOOK_CLIENTS))
def test_session_start_injects_memory_and_remember_is_stored(name: str, tmp_path: Path) -> None:
    client, layout = wired(name, tmp_path)
    graymatter(layout, "remember", AGENT, SEEDED_FACT)
    graymatter(layout, "checkpoint", "save", AGENT, "--state", json.dumps(CHECKPOINT_STATE))
    run = run_client(client, layout, [], prompt=f"remember: {NOTE}", tag="hooks")
    problems = [] if run.returncode == 0 else [f"exit {run.returncode}: {run.stderr[-500:]}"]
    first = first_request_text(run.requests, client)
    for label, needle in (("stored fact", SEEDED_FACT), ("last checkpoint", CHECKPOINT_MARKER)):
        if needle not in first:
            problems.append(f"the first model request lacks the {label} ({needle!r})")
    facts = [fact["text"] for fact in json.loads(graymatter(layout, "--json", "list", AGENT).stdout)]
    if NOTE not in facts:
        problems.append(f"remember: did not land in the project's store: {facts}")
    outcomes = {(line.get("event"), line.get("outcome")) for line in hook_log(layout)}
    for expected in (("session-start", "injected"), ("user-prompt", "remembered")):
        if expected not in outcomes:
            problems.append(f"hook log lacks {expected}: {sorted(map(str, outcomes))}")
    case = "hooks: fact + checkpoint in 1st request; remember: stored"
    report.add_row(name, client.version, case, problems, run.seconds)
    assert not problems, "\n".join(problems)


def test_qwen_prompt_hook_recalls_and_remembers(tmp_path: Path) -> None:
    client, layout = wired("qwen", tmp_path)
    graymatter(layout, "remember", AGENT, SEEDED_FACT)
    asked = run_client(client, layout, [], prompt=QUESTION, tag="hooks-recall")
    told = run_client(client, layout, [], prompt=f"remember: {NOTE}", tag="hooks-remember")
    problems = [f"exit {r.returncode}: {r.stderr[-300:]}" for r in (asked, told) if r.returncode != 0]
    if SEEDED_FACT not in first_request_text(asked.requests, client):
        problems.append("the first model request lacks the recalled fact")
    facts = [fact["text"] for fact in json.loads(graymatter(layout, "--json", "list", AGENT).stdout)]
    if NOTE not in facts:
        problems.append(f"remember: did not land in the project's store: {facts}")
    case = "hooks: per-prompt recall in 1st request; remember: stored"
    report.add_row("qwen", client.version, case, problems, asked.seconds + told.seconds)
    assert not problems, "\n".join(problems)


def break_store(layout: Layout) -> None:
    database = layout.store / "graymatter.db"
    for suffix in ("-wal", "-shm"):
        database.with_name(database.name + suffix).unlink(missing_ok=True)
    database.write_bytes(b"this is not a SQLite database\n" * 64)


def test_broken_store_hook_prints_nothing_exits_zero_and_logs(tmp_path: Path) -> None:
    client, layout = wired("claude-code", tmp_path)
    graymatter(layout, "remember", AGENT, SEEDED_FACT)
    break_store(layout)
    payload = {"session_id": "gate-broken", "cwd": str(layout.project), "hook_event_name": "SessionStart"}
    env = {**graymatter_env(layout), "CLAUDE_PROJECT_DIR": str(layout.project)}
    before = len(hook_log(layout))
    done = subprocess.run(
        [GRAYMATTER, "hook", "claude-code", "session-start"],
        input=json.dumps({**payload, "source": "startup"}),
        cwd=layout.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    problems = [] if done.returncode == 0 else [f"hook exited {done.returncode}"]
    if done.stdout or done.stderr:
        problems.append(f"hook printed {done.stdout[:200]!r} / {done.stderr[:200]!r}")
    lines = hook_log(layout)[before:]
    if len(lines) != 1 or lines[0].get("outcome") in (None, "injected"):
        problems.append(f"hook log lines: {lines}")
    run = run_client(client, layout, [], prompt="hello", tag="broken-store")
    if run.returncode != 0:
        problems.append(f"claude exited {run.returncode} with a broken store: {run.stderr[-400:]}")
    if SEEDED_FACT in first_request_text(run.requests, client) or not run.main_requests():
        problems.append("the broken store's session did not reach the model cleanly")
    report.add_row("claude-code", client.version, "hooks negative: broken store", problems, run.seconds)
    assert not problems, "\n".join(problems)
