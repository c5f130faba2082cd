"""Real-client gate: Claude Code, Codex, Gemini CLI, Qwen Code and OpenCode, wired by ``graymatter init``.

Each client runs headless at its own defaults in a fresh HOME and a loopback-only network namespace,
driven by the scripted model of :mod:`wire_models`. Per client: the first agent-loop model request offers
graymatter's seven tools (Qwen Code: the request after its ``tool_search`` step) and carries the instruction
block ``init`` wrote (CLAUDE.md, AGENTS.md, GEMINI.md, QWEN.md); a scripted session of
checkpoint_resume / checkpoint_save / memory_add / memory_search completes, the model gets each result,
and the project's store holds the checkpoint and the fact (read back through the graymatter CLI).
Negative controls for the clients that validate structured results (Gemini CLI, Qwen Code; OpenCode's
is in test_opencode_gate.py, with its every-tool table): a server whose ``checkpoint_resume`` result is
altered to violate its outputSchema is rejected by the client, so this gate can fail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate import report
from gate.clients import CLIENTS, TOOLS, Client, Layout
from gate.session import (
    ClientRun,
    graymatter,
    run_client,
    server_command,
    tool_results,
    wire_by_hand,
    wire_with_init,
)
from gate.wire_models import Step

pytestmark = [pytest.mark.gate, pytest.mark.timeout(900)]

AGENT = "gateproj"
"""The agent id project routing derives from the project folder's name."""
STATE = {"task": "client gate", "step": 2, "notes": ["scripted"], "done": False}
HOOK_NOTE = "graymatter_hook"
"""The key a hook-saved checkpoint adds to the agent's state it carries forward (session end, compaction)."""
INSTRUCTION_TEXT = "This project has persistent memory"
"""A sentence of the managed instruction block ``graymatter init`` writes."""
FACT = "The deploy script lives in tools/deploy.sh."
VALIDATION_ERRORS = {
    "gemini": "Structured content does not match the tool's output schema",
    "qwen": "Structured content does not match the tool's output schema",
}


def scripted_steps(client: Client) -> list[Step]:
    """The session every client runs: resume (none yet), save, add a fact, search for it."""
    calls = [
        ("checkpoint_resume", {"agent_id": AGENT, "on_missing": "empty"}),
        ("checkpoint_save", {"agent_id": AGENT, "state": json.dumps(STATE)}),
        ("memory_add", {"agent_id": AGENT, "text": FACT}),
        ("memory_search", {"agent_id": AGENT, "query": "deploy script"}),
    ]
    steps = [
        Step(client.tool_name(tool), arguments, client.namespace, f"call_{index:02d}")
        for index, (tool, arguments) in enumerate(calls, start=1)
    ]
    if client.name == "qwen":  # Qwen defers MCP tools: the model must fetch them first
        query = "select:" + ",".join(client.tool_name(tool) for tool in TOOLS)
        steps.insert(0, Step("tool_search", {"query": query, "max_results": len(TOOLS)}, None, "call_00"))
    return steps


def prepared(name: str, tmp_path: Path) -> tuple[Client, Layout]:
    client = CLIENTS[name]
    layout = Layout(tmp_path)
    layout.make()
    client.seed(layout)
    return client, layout


def offer_problems(run: ClientRun) -> list[str]:
    """The first agent-loop request must offer all seven tools (Qwen: none until its tool search)."""
    main = run.main_requests()
    if not main:
        return [f"no model request reached the scripted model (exit {run.returncode}): {run.stderr[-400:]}"]
    first = run.offered(0)
    if run.client.name == "qwen":
        problems = [] if first == [] else [f"qwen declared {first} before its tool search"]
        listed = json.dumps(main[0]["body"])  # the deferred tools are named in the system prompt
        missing = [tool for tool in TOOLS if run.client.tool_name(tool) not in listed]
        declared = [(tool.get("function") or {}).get("name") for tool in main[0]["body"].get("tools") or []]
        if missing or "tool_search" not in declared:
            problems.append(f"qwen's first request lacks tool_search or the deferred names {missing}")
        if run.offered(1) != sorted(TOOLS):
            problems.append(f"after tool_search qwen offered {run.offered(1)}")
        return problems
    return [] if first == sorted(TOOLS) else [f"first model request offered {first}"]


def instruction_problems(run: ClientRun) -> list[str]:
    """The instruction block ``init`` wrote (CLAUDE.md, AGENTS.md, GEMINI.md, QWEN.md) reaches the model."""
    main = run.main_requests()
    if main and INSTRUCTION_TEXT not in json.dumps(main[0]["body"]):
        return ["the first model request lacks graymatter's instruction block"]
    return []


def session_problems(run: ClientRun, steps: list[Step]) -> list[str]:
    """The session completed and every tool result reached the model."""
    problems = [] if run.returncode == 0 else [f"exit {run.returncode}: {run.stderr[-600:]}"]
    main = run.main_requests()
    results = tool_results(run.client, main[-1]["body"]) if main else []
    if len(main) != len(steps) + 1 or len(results) != len(steps):
        return [*problems, f"{len(main)} model requests, {len(results)} tool results for {len(steps)} steps"]
    resumed, saved, added, searched = results[-4:]
    if "No checkpoint saved" not in resumed and '"found":false' not in resumed.replace(" ", ""):
        problems.append(f"checkpoint_resume result: {resumed[:200]}")
    for label, result, needle in (("save", saved, "checkpoint"), ("add", added, "stored")):
        if needle not in result.lower():
            problems.append(f"{label} result: {result[:200]}")
    if "tools/deploy.sh" not in searched:
        problems.append(f"memory_search did not return the fact: {searched[:200]}")
    return problems


def store_problems(layout: Layout) -> list[str]:
    """The project's store, read through the CLI, holds the session's fact and its checkpoint's state."""
    facts = json.loads(graymatter(layout, "--json", "list", AGENT).stdout)
    problems = []
    if [fact["text"] for fact in facts] != [FACT] or facts[0]["provenance"]["interface"] != "mcp":
        problems.append(f"store facts: {facts}")
    checkpoint = json.loads(graymatter(layout, "--json", "checkpoint", "resume", AGENT).stdout)
    state = {k: v for k, v in (checkpoint.get("state") or {}).items() if k != HOOK_NOTE}
    if state != STATE:
        problems.append(f"store checkpoint: {checkpoint}")
    return problems


@pytest.mark.parametrize("name", list(CLIENTS))
def test_client_wired_by_init_offers_the_tools_and_completes_a_session(name: str, tmp_path: Path) -> None:
    client, layout = prepared(name, tmp_path)
    if os.environ.get("GATE_HAND_WIRING") == "1":  # debugging aid: isolate a client problem from init
        wire_by_hand(client, layout, server_command(layout), required=True)
    else:
        wire_with_init(client, layout)
    steps = scripted_steps(client)
    run = run_client(client, layout, steps)
    problems = offer_problems(run) + session_problems(run, steps)
    problems += [] if os.environ.get("GATE_HAND_WIRING") == "1" else instruction_problems(run)
    problems += store_problems(layout) if run.returncode == 0 else []
    report.add_row(
        name,
        client.version,
        "init-wired: 7 tools + instructions in 1st request; session stored",
        problems,
        run.seconds,
    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", list(VALIDATION_ERRORS))
def test_negative_control_schema_violation_is_rejected(name: str, tmp_path: Path) -> None:
    client, layout = prepared(name, tmp_path)
    log = tmp_path / "mcp.jsonl"
    wire_by_hand(client, layout, server_command(layout, log, flip_found=True))
    resume = Step(
        client.tool_name("checkpoint_resume"), {"agent_id": AGENT, "on_missing": "empty"}, None, "c1"
    )
    steps = [*scripted_steps(client)[:1], resume] if name == "qwen" else [resume]
    run = run_client(client, layout, steps, tag="negative")
    main = run.main_requests()
    results = tool_results(client, main[-1]["body"]) if main else []
    altered = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    problems = [] if any(entry.get("altered") for entry in altered) else ["the recorder altered nothing"]
    if not results or VALIDATION_ERRORS[name] not in results[-1]:
        problems.append(f"{name} accepted the schema-violating result: {(results or ['<none>'])[-1][:300]}")
    report.add_row(
        name, client.version, "negative control: outputSchema violation rejected", problems, run.seconds
    )
    assert not problems, "\n".join(problems)
