"""Memory across runs over graymatter's MCP tools: what a run finds before its first request, what it leaves.

Before the first request `recall_context` calls `checkpoint_resume` (on_missing "empty") and `memory_search`
for the task, and renders what they return as a block the system prompt ends with. At every ending
`save_checkpoint` stores a compact checkpoint: the task, the status, the files the run wrote or edited and a
short summary. tinyagent never imports graymatter: these are ordinary MCP tool calls.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tinyagent.config.mcp import MEMORY_SERVER
from tinyagent.keys import redact
from tinyagent.mcpclient.results import PREFIX, offered_name

if TYPE_CHECKING:
    from tinyagent.mcpclient.hub import McpHub
    from tinyagent.trajectory.models import Trajectory

__all__ = ["AGENT_ID", "recall_context", "save_checkpoint"]

AGENT_ID = "tinyagent"
MAX_CONTEXT_CHARS = 6000
MAX_SUMMARY_CHARS = 500
MAX_FILES = 50
TOP_K = 8


def recall_context(hub: McpHub, task: str) -> str:
    """The memory block for the instructions: the saved checkpoint and the facts relevant to `task`."""
    lines = [
        "",
        "",
        "## Memory from earlier runs (graymatter)",
        f"Your durable memory is the graymatter MCP server (tools {PREFIX}{MEMORY_SERVER}__*); "
        f'use agent_id "{AGENT_ID}". Store each durable learning (a decision, a gotcha) as one sentence with '
        f"{offered_name(MEMORY_SERVER, 'memory_add')}; never store secrets. tinyagent saves a checkpoint "
        "of this run when it ends.",
    ]
    checkpoint = _structured(hub, "checkpoint_resume", {"agent_id": AGENT_ID, "on_missing": "empty"})
    if checkpoint is not None and "state" in checkpoint:
        state = json.dumps(checkpoint["state"], ensure_ascii=False, sort_keys=True)
        lines.append(f"Last checkpoint ({checkpoint.get('created_at', 'unknown time')}): {state}")
    else:
        lines.append("Last checkpoint: none saved yet.")
    found = _structured(hub, "memory_search", {"agent_id": AGENT_ID, "query": task[:2000], "top_k": TOP_K})
    facts = [fact.get("text", "") for fact in (found or {}).get("facts", []) if isinstance(fact, dict)]
    lines.append("Facts stored earlier that may matter now:" if facts else "No stored facts match the task.")
    lines.extend(f"- {text}" for text in facts)
    block = "\n".join(lines)
    return block if len(block) <= MAX_CONTEXT_CHARS else block[: MAX_CONTEXT_CHARS - 3] + "..."


def save_checkpoint(hub: McpHub, trajectory: Trajectory) -> str | None:
    """Save the run's compact checkpoint; None when saved, else the one-line reason it was not."""
    summary = trajectory.submission or trajectory.exit_detail or ""
    state = {
        "task": redact(trajectory.task)[:MAX_SUMMARY_CHARS],
        "status": trajectory.exit_status.value,
        "files_touched": files_touched(trajectory),
        "summary": redact(summary)[:MAX_SUMMARY_CHARS],
        "steps": trajectory.totals.steps,
    }
    hub.reopen()
    result = hub.call_tool(
        MEMORY_SERVER,
        "checkpoint_save",
        {"agent_id": AGENT_ID, "state": json.dumps(state, ensure_ascii=False)},
        shown="checkpoint_save",
    )
    return result.content if result.is_error else None


def files_touched(trajectory: Trajectory) -> list[str]:
    """The paths the run's write_file and edit_file calls named (first mention first, at most MAX_FILES)."""
    paths: list[str] = []
    for message in trajectory.messages:
        for call in message.tool_calls:
            if call.name not in ("write_file", "edit_file"):
                continue
            try:
                path = json.loads(call.arguments).get("path")
            except (ValueError, AttributeError):
                continue
            if isinstance(path, str) and path not in paths and len(paths) < MAX_FILES:
                paths.append(path)
    return paths


def _structured(hub: McpHub, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The structured content of one memory call, or None when it failed."""
    structured = hub.call_structured(MEMORY_SERVER, tool, arguments)
    return structured if isinstance(structured, dict) else None
