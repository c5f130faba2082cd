"""The real-client release gate: OpenCode (pinned 1.18.x) against ``graymatter mcp serve``, fully offline.

Reproduces the case table of the checkpoint_resume decision record (docs/decisions/0001-...) in one
OpenCode session, exercises every other tool through the same real validator, and runs the negative
control: a transparent recorder flips only ``found`` false -> true and OpenCode must reject the result.
The run fails on any mismatch, on more than one ``tools/list`` per session (OpenCode's silent fallback
would switch output validation off), and when a "completed" call never reached the server.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.fixture_model import ScriptedCall
from gate.opencode import OPENCODE_VERSION, REPO_ROOT, REPORT, GateRun, ensure_opencode, run_session

pytestmark = [pytest.mark.gate, pytest.mark.timeout(900)]

AGENT = "gate-agent"
MISSING = "gate-missing"
EMPTY_AGENT = "gate-empty"
STATE = {"task": "release gate", "step": 3, "notes": ["synthetic", "checkpoint"], "done": False}
MISSING_TEXT = f'no checkpoint found for agent "{MISSING}": no checkpoints for agent "{MISSING}"'
EVIDENCE_DIR = REPO_ROOT / ".gate" / "evidence"


@dataclass(frozen=True)
class Case:
    """One scripted tool call and what must happen on the MCP wire and in OpenCode."""

    label: str
    tool: str
    arguments: dict[str, Any]
    status: str  # OpenCode tool part status: "completed" or "error"
    wire: str  # "structured", "structured-empty" or "error"
    text: str | None = None  # exact text OpenCode must surface (output or error), when pinned

    def step(self, index: int) -> ScriptedCall:
        return ScriptedCall(
            call_id=f"call_{index:02d}", tool=f"graymatter_{self.tool}", arguments=self.arguments
        )


SEED_CASES = [
    Case(
        'Missing checkpoint, on_missing: "empty"',
        "checkpoint_resume",
        {"agent_id": AGENT, "on_missing": "empty"},
        "completed",
        "structured-empty",
        json.dumps({"found": False, "agent_id": AGENT}, separators=(",", ":")),
    ),
    Case(
        "Save a synthetic checkpoint",
        "checkpoint_save",
        {"agent_id": AGENT, "state": json.dumps(STATE)},
        "completed",
        "structured",
    ),
    Case(
        'Resume that checkpoint, on_missing: "empty"',
        "checkpoint_resume",
        {"agent_id": AGENT, "on_missing": "empty"},
        "completed",
        "structured",
    ),
    Case(
        "Missing checkpoint, parameter omitted",
        "checkpoint_resume",
        {"agent_id": MISSING},
        "error",
        "error",
        MISSING_TEXT,
    ),
    Case(
        'Missing checkpoint, explicit on_missing: "error"',
        "checkpoint_resume",
        {"agent_id": MISSING, "on_missing": "error"},
        "error",
        "error",
        MISSING_TEXT,
    ),
    Case(
        "Resume the saved checkpoint, parameter omitted",
        "checkpoint_resume",
        {"agent_id": AGENT},
        "completed",
        "structured",
    ),
]

TOOL_CASES = [
    Case(
        "memory_add",
        "memory_add",
        {"agent_id": AGENT, "text": "The deploy script lives in tools/deploy.sh.", "confidence": "verified"},
        "completed",
        "structured",
    ),
    Case(
        "memory_add (second fact)",
        "memory_add",
        {"agent_id": AGENT, "text": "Release notes are written in docs/CHANGELOG.md."},
        "completed",
        "structured",
    ),
    Case(
        "memory_search with hits",
        "memory_search",
        {"agent_id": AGENT, "query": "deploy script"},
        "completed",
        "structured",
    ),
    Case(
        "memory_search without hits",
        "memory_search",
        {"agent_id": EMPTY_AGENT, "query": "zebra quantum marmalade"},
        "completed",
        "structured",
    ),
    Case(
        "memory_search explain",
        "memory_search",
        {"agent_id": AGENT, "query": "release notes", "explain": True},
        "completed",
        "structured",
    ),
    Case(
        "memory_search_batch",
        "memory_search_batch",
        {"agent_id": AGENT, "queries": ["deploy script", "release notes", " "]},
        "completed",
        "structured",
    ),
    Case(
        "memory_alias",
        "memory_alias",
        {"agent_id": AGENT, "term": "deploy", "equivalents": ["ship", "rollout"]},
        "completed",
        "structured",
    ),
    Case(
        "memory_reflect add (deprecated agent)",
        "memory_reflect",
        {"action": "add", "agent": AGENT, "text": "CI runs on two cores."},
        "completed",
        "structured",
    ),
    Case(
        "memory_reflect update",
        "memory_reflect",
        {
            "action": "update",
            "agent_id": AGENT,
            "target": "CI runs on two cores.",
            "text": "CI runs on four cores.",
        },
        "completed",
        "structured",
    ),
    Case(
        "memory_reflect pin",
        "memory_reflect",
        {"action": "pin", "agent_id": AGENT, "target": "CI runs on four cores."},
        "completed",
        "structured",
    ),
    Case(
        "memory_reflect unpin",
        "memory_reflect",
        {"action": "unpin", "agent_id": AGENT, "target": "CI runs on four cores."},
        "completed",
        "structured",
    ),
    Case(
        "memory_reflect forget",
        "memory_reflect",
        {"action": "forget", "agent_id": AGENT, "target": "CI runs on four cores."},
        "completed",
        "structured",
    ),
    Case(
        "memory_reflect link",
        "memory_reflect",
        {
            "action": "link",
            "agent_id": AGENT,
            "text": "deploy.sh",
            "target": "CHANGELOG.md",
            "relation": "updates",
        },
        "completed",
        "structured",
    ),
    Case(
        'Invalid on_missing "EMPTY"',
        "checkpoint_resume",
        {"agent_id": AGENT, "on_missing": "EMPTY"},
        "error",
        "error",
        'on_missing must be "error" or "empty"',
    ),
]

NEGATIVE_CASE = Case(
    'Negative control: recorder flips found false -> true (on_missing: "empty")',
    "checkpoint_resume",
    {"agent_id": MISSING, "on_missing": "empty"},
    "error",
    "structured-empty",
)


def _surface(part: dict[str, Any]) -> str:
    state = part.get("state") or {}
    return str(state.get("output") if state.get("status") == "completed" else state.get("error"))


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def judge(run: GateRun, cases: list[Case], *, negative: bool = False) -> tuple[list[list[str]], list[str]]:
    """The printable case table and every mismatch found."""
    rows: list[list[str]] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, case in enumerate(cases):
        step = case.step(index)
        key = json.dumps([case.tool, case.arguments], sort_keys=True)
        request, response = run.tool_call(step, seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
        part = run.tool_events.get(step.call_id)
        mcp_result = (response or {}).get("result") or {}
        wire_ok = request is not None and response is not None
        if case.wire == "error":
            wire_ok = wire_ok and mcp_result.get("isError") is True and "structuredContent" not in mcp_result
            mcp_summary = "text-only isError: true, no structuredContent"
        elif case.wire == "structured-empty":
            expected = {"found": False, "agent_id": case.arguments["agent_id"]}
            wire_ok = (
                wire_ok and mcp_result.get("structuredContent") == expected and not mcp_result.get("isError")
            )
            mcp_summary = f"success, structuredContent {json.dumps(expected)}"
        else:
            wire_ok = wire_ok and isinstance(mcp_result.get("structuredContent"), dict)
            wire_ok = wire_ok and not mcp_result.get("isError")
            mcp_summary = "success with structuredContent"
        status = (part or {}).get("state", {}).get("status", "missing")
        surfaced = _surface(part) if part else ""
        client_ok = status == case.status and (case.text is None or surfaced == case.text)
        if case.wire != "error" and status == "completed":  # the text is the structured result's JSON
            client_ok = client_ok and _parsed(surfaced) == mcp_result.get("structuredContent")
        if negative:
            client_ok = client_ok and all(
                fragment in surfaced
                for fragment in (
                    "MCP error -32602: Structured content does not match the tool's output schema",
                    "data/found must be equal to one of the allowed values",
                    "data must match exactly one schema in oneOf",
                )
            )
        rows.append(
            [
                case.label,
                mcp_summary if wire_ok else "MISMATCH",
                f"{status}: {' '.join(surfaced.split())[:70]}",
            ]
        )
        if request is None:
            problems.append(f"{case.label}: no matching tools/call reached the server")
        elif not wire_ok:
            problems.append(f"{case.label}: unexpected MCP result {json.dumps(mcp_result)[:300]}")
        if not client_ok:
            problems.append(f"{case.label}: OpenCode reported {status!r}: {surfaced[:300]!r}")
    return rows, problems


def _print_table(title: str, rows: list[list[str]]) -> None:
    header = ["Case", "MCP result", "OpenCode result"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    lines = [title] + [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, ["-" * w for w in widths], *rows]
    ]
    REPORT.append("\n".join(lines) + "\n")


def _common_checks(run: GateRun) -> list[str]:
    problems = []
    if run.returncode != 0:
        problems.append(f"opencode exited with {run.returncode}: {run.stderr[-800:]}")
    lists = run.client_requests("tools/list")
    if len(lists) != 1:
        problems.append(
            f"expected exactly one tools/list request, saw {len(lists)} (silent schema fallback?)"
        )
    else:
        answer = run.response_to(lists[0].get("id")) or {}
        names = sorted(t["name"] for t in (answer.get("result") or {}).get("tools", []))
        expected = sorted(
            [
                "memory_search",
                "memory_search_batch",
                "memory_add",
                "memory_alias",
                "checkpoint_save",
                "checkpoint_resume",
                "memory_reflect",
            ]
        )
        if names != expected:
            problems.append(f"tools/list returned {names}")
    handshake = run.handshake()
    if handshake.get("client_name") != "opencode" or handshake.get("client_version") != OPENCODE_VERSION:
        problems.append(f"unexpected client identity {handshake}")
    errors = [e for e in run.events if e.get("type") == "error"]
    if errors:
        problems.append(f"session-level errors: {json.dumps(errors)[:500]}")
    return problems


def _save_evidence(name: str, run: GateRun, rows: list[list[str]], binary: Path) -> None:
    EVIDENCE_DIR.mkdir(parents=True, exist_ok=True)
    summary = {
        "handshake": run.handshake(),
        "returncode": run.returncode,
        "binary_sha256": hashlib.sha256(binary.read_bytes()).hexdigest(),
        "table": rows,
    }
    (EVIDENCE_DIR / f"{name}-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for path in run.root.glob("*.jsonl"):
        (EVIDENCE_DIR / path.name).write_text(path.read_text())


@pytest.fixture(scope="module")
def opencode_binary() -> Path:
    return ensure_opencode()


def test_seed_table_and_every_tool_through_opencode(opencode_binary: Path, tmp_path: Path) -> None:
    cases = SEED_CASES + TOOL_CASES
    run = run_session(opencode_binary, tmp_path, [c.step(i) for i, c in enumerate(cases)])
    rows, problems = judge(run, cases)
    problems += _common_checks(run)
    _print_table(f"OpenCode gate: valid run ({run.handshake()})", rows)
    _save_evidence("valid", run, rows, opencode_binary)

    # Seed specifics: the saved checkpoint comes back exactly; the default error path is byte-identical.
    saved = run.tool_call(SEED_CASES[1].step(1))[1] or {}
    checkpoint_id = ((saved.get("result") or {}).get("structuredContent") or {}).get("checkpoint_id")
    for index, occurrence in ((2, 1), (5, 0)):  # case 3 repeats case 1's arguments
        resumed = run.tool_call(SEED_CASES[index].step(index), occurrence)[1] or {}
        content = (resumed.get("result") or {}).get("structuredContent") or {}
        if content.get("id") != checkpoint_id or content.get("state") != STATE or "found" in content:
            problems.append(f"{SEED_CASES[index].label}: resumed payload {content} does not match the save")
    omitted = (run.tool_call(SEED_CASES[3].step(3))[1] or {}).get("result")
    explicit = (run.tool_call(SEED_CASES[4].step(4))[1] or {}).get("result")
    if json.dumps(omitted, sort_keys=True) != json.dumps(explicit, sort_keys=True):
        problems.append("the omitted and explicit on_missing error results differ")
    assert not problems, "\n".join(problems)


def test_negative_control_is_rejected_by_opencode(opencode_binary: Path, tmp_path: Path) -> None:
    run = run_session(opencode_binary, tmp_path, [NEGATIVE_CASE.step(0)], flip_found=True)
    rows, problems = judge(run, [NEGATIVE_CASE], negative=True)
    problems += _common_checks(run)
    if not any(entry.get("altered") for entry in run.mcp):
        problems.append("the recorder did not alter any response")
    _print_table(f"OpenCode gate: negative control ({run.handshake()})", rows)
    _save_evidence("invalid", run, rows, opencode_binary)
    assert not problems, "\n".join(problems)
