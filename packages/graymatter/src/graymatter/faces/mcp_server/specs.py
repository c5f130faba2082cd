"""What the MCP server publishes: its instructions and the seven tool specifications (a table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graymatter.faces.mcp_server.schemas import (
    ArgumentsModel,
    CheckpointResumeArguments,
    CheckpointResumeEmpty,
    CheckpointResumeResult,
    CheckpointSaveArguments,
    CheckpointSaveResult,
    MemoryAddArguments,
    MemoryAddResult,
    MemoryAliasArguments,
    MemoryAliasResult,
    MemoryReflectArguments,
    MemoryReflectResult,
    MemorySearchArguments,
    MemorySearchBatchArguments,
    MemorySearchBatchResult,
    MemorySearchResult,
    checkpoint_resume_output_schema,
    output_schema_of,
)

SERVER_NAME = "graymatter"

INSTRUCTIONS = (
    "graymatter is your durable memory across sessions. Follow this protocol.\n"
    '1. At session start call checkpoint_resume with on_missing "empty" to restore saved state, then '
    'memory_search for the task with your agent_id and again with agent_id "__shared__" for project-wide '
    "memory (memory_search_batch answers several questions in one call).\n"
    "2. Store each durable learning (decision, preference, gotcha) as one sentence with memory_add. "
    "Never store transcripts or secrets.\n"
    "3. When a stored fact is wrong or outdated, call memory_reflect with action update and the exact old "
    "text as target; never leave both versions live.\n"
    "4. In long sessions and before you stop, call checkpoint_save with a JSON object saying where you are.\n"
    "5. On a weak match, reformulate once, then declare lasting synonyms with memory_alias."
)
"""Static server instructions sent at initialize (never derived from stored data; ≤ 240 tokens)."""


@dataclass(frozen=True)
class ToolSpec:
    """Everything published about one tool."""

    name: str
    title: str
    description: str
    arguments: type[ArgumentsModel]
    output_model: Any
    output_schema: dict[str, Any]
    read_only: bool


DESCRIPTIONS: dict[str, str] = {
    "memory_search": (
        "Search one agent's durable memory with hybrid recall (keyword, semantic and recency signals). "
        "Use it before answering anything earlier sessions may have settled: once with your agent_id and "
        'once with agent_id "__shared__" for project-wide memory. Returns a numbered list with a count '
        'header, or "No memories found" when nothing matches; superseded facts never appear. '
        "explain=true adds a ranking receipt per fact. Store new facts with memory_add, correct "
        "wrong ones with memory_reflect, and ask several questions at once with memory_search_batch."
    ),
    "memory_search_batch": (
        "Search one agent's durable memory with several queries in one call; put every open question "
        "in one call. Ranking per query is identical to memory_search. Use it at session start or "
        "before a task that touches several topics. Returns each query's facts plus a merged, "
        "de-duplicated list (best rank first); a failing query reports its error and the others still "
        "answer. Errors when no query is given."
    ),
    "memory_add": (
        "Store one durable fact: a decision, preference, constraint or gotcha, as one atomic sentence. "
        "Use it whenever you learn something a later session should know; do not store transcripts or "
        "secrets. Returns the new fact id and its confidence label. To correct or retire a stored fact "
        "use memory_reflect instead of adding a contradiction. Errors on blank or oversized text."
    ),
    "memory_alias": (
        "Declare that a term and its equivalents mean the same thing in one agent's vocabulary, so "
        "later memory_search calls bridge them. Use it after a weak match when you know a lasting "
        "synonym. Aliases are never returned as memories; declaring again adds another alias. Returns "
        "the stored alias and its id."
    ),
    "checkpoint_save": (
        "Persist a session checkpoint: a JSON object describing where you are (task, progress, next "
        "steps). Use it in long sessions and before you stop; checkpoint_resume loads the latest one "
        "next time. Every save is kept under a new id. Returns the checkpoint id and creation time. "
        "Errors when state is not a JSON object."
    ),
    "checkpoint_resume": (
        "Read the latest checkpoint saved with checkpoint_save for an agent. Use it at session start. "
        "Returns the checkpoint id, creation time and saved state. When the agent has none: with "
        'on_missing "error" (default) it is a tool error; with on_missing "empty" it is a success '
        '{"found": false, "agent_id": ...}. Storage failures are always errors.'
    ),
    "memory_reflect": (
        "Curate your own memory: add a fact, update a wrong one (the old text is superseded, never "
        "deleted), forget, pin or unpin facts by exact text, or link two named entities. Use it when a "
        "stored fact is wrong, outdated or vital; plain new facts go to memory_add. Identify yourself "
        "with agent_id (agent is a deprecated alias). Returns what changed. Errors when the target text "
        "matches no live fact."
    ),
}

_RESUME_OUTPUT = CheckpointResumeResult | CheckpointResumeEmpty

# name, title, argument model, result model, read-only
_TOOLS: tuple[tuple[str, str, type[ArgumentsModel], Any, bool], ...] = (
    ("memory_search", "Search agent memory", MemorySearchArguments, MemorySearchResult, True),
    (
        "memory_search_batch",
        "Search agent memory with several queries at once",
        MemorySearchBatchArguments,
        MemorySearchBatchResult,
        True,
    ),
    ("memory_add", "Store a durable fact", MemoryAddArguments, MemoryAddResult, False),
    ("memory_alias", "Teach the store a vocabulary alias", MemoryAliasArguments, MemoryAliasResult, False),
    ("checkpoint_save", "Save a session checkpoint", CheckpointSaveArguments, CheckpointSaveResult, False),
    ("checkpoint_resume", "Load the latest checkpoint", CheckpointResumeArguments, _RESUME_OUTPUT, True),
    ("memory_reflect", "Curate your own memory", MemoryReflectArguments, MemoryReflectResult, False),
)


def _output_schema(model: Any) -> dict[str, Any]:
    return checkpoint_resume_output_schema() if model is _RESUME_OUTPUT else output_schema_of(model)


TOOL_SPECS: tuple[ToolSpec, ...] = tuple(
    ToolSpec(name, title, DESCRIPTIONS[name], arguments, output, _output_schema(output), read_only)
    for name, title, arguments, output, read_only in _TOOLS
)

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOL_SPECS)


def estimate_tokens(text: str) -> float:
    """The instructions budget estimator: words × 1.33."""
    return len(text.split()) * 1.33
