"""Cost of `tinyagent --resume` validation.

1. In process: `tinyagent.resume.validate.validate_checkpoint` (strict JSON scan, envelope, strict schema,
   counters, history and pairing, tool digest) against the baseline measured in the same run: a
   plain `Trajectory.model_validate_json` of the same bytes (what loading a trajectory as a log
   costs). Checkpoints of 100, 1,000 and 10,000 messages with 1 KiB tool outputs; medians and ratio.
2. Process level: a whole one-request run resumed from a 1,000-message checkpoint against a fresh
   one-request run (both real subprocesses with the in-package scripted model), to show what the
   resume path (read, validate, rebuild instructions, initial save) adds to an invocation.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import latency_summary, print_table, subprocess_env, time_calls

SIZES = (100, 1_000, 10_000)
OUTPUT_BYTES = 1024


def build_checkpoint(
    messages: int,
    *,
    cwd: str = "/tmp/project",
    system_prompt: str = "You are tinyagent.",
    provider: str = "openai",
    model: str = "gpt-4.1-mini",
) -> bytes:
    """A valid checkpoint with about `messages` messages (one bash call + result per turn)."""
    from tinyagent.prompts import instructions_sha256
    from tinyagent.tools.specs import TOOL_SPECS, toolset_sha256
    from tinyagent.trajectory.models import ExitStatus, Limits, ResumeMetadata, Timing, Totals, Trajectory
    from tinyagent.types import Message, ToolCall

    turns = max(0, (messages - 2) // 2)
    history = [Message(role="system", content=system_prompt), Message(role="user", content="task")]
    for turn in range(turns):
        call = ToolCall(id=f"call_{turn % 7}", name="bash", arguments=json.dumps({"command": f"echo {turn}"}))
        history.append(Message(role="assistant", content=None, tool_calls=[call]))
        history.append(
            Message(
                role="tool", content="x" * OUTPUT_BYTES, tool_call_id=call.id, name="bash", is_error=False
            )
        )
    trajectory = Trajectory(
        tinyagent_version="bench",
        task="task",
        provider=provider,
        model=model,
        system_prompt=system_prompt,
        messages=history,
        tools=list(TOOL_SPECS),
        totals=Totals(steps=turns, input_tokens=100 * turns, output_tokens=10 * turns),
        limits=Limits(step_limit=turns),
        exit_status=ExitStatus.STEP_LIMIT,
        timing=Timing(started_at="2026-11-30T00:00:00Z"),
        resume=ResumeMetadata(
            cwd=cwd,
            agents_md="off",
            instructions_sha256=instructions_sha256(system_prompt),
            toolset_sha256=toolset_sha256(TOOL_SPECS),
        ),
    )
    return trajectory.model_dump_json(indent=1).encode("utf-8") + b"\n"


def _validation(quick: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from tinyagent.resume.validate import validate_checkpoint
    from tinyagent.trajectory.models import Trajectory

    rows = []
    results = []
    for size in SIZES:
        raw = build_checkpoint(size)
        repeats = (3 if quick else 7) if size >= 10_000 else (10 if quick else 30)
        validate_checkpoint(raw)  # warm-up (and a correctness check: it must be accepted)
        Trajectory.model_validate_json(raw)
        resume = time_calls(lambda raw=raw: validate_checkpoint(raw), repeats)
        baseline = time_calls(lambda raw=raw: Trajectory.model_validate_json(raw), repeats)
        median_resume = statistics.median(resume)
        median_base = statistics.median(baseline)
        ratio = median_resume / median_base if median_base else float("nan")
        rows.append(
            [size, round(len(raw) / 1e6, 2), median_base * 1000, median_resume * 1000, round(ratio, 2)]
        )
        results.append(
            {
                "messages": size,
                "bytes": len(raw),
                "baseline_plain_parse": latency_summary(baseline),
                "validate_checkpoint": latency_summary(resume),
                "ratio_median": round(ratio, 3),
            }
        )
    table = print_table(
        "resume validation vs plain trajectory parse (same bytes, same run)",
        ["messages", "MB", "plain parse p50 ms", "validate_checkpoint p50 ms", "ratio"],
        rows,
    )
    return table, results


def _cli(quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """A whole one-request run: fresh vs resumed from a 1,000-message checkpoint (scripted model)."""
    from tinyagent.prompts import build_system_prompt

    repeats = 5 if quick else 11
    env = subprocess_env()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        cwd = str(project.resolve())
        script = root / "script.json"
        script.write_text(
            json.dumps({"replies": [{"tool_calls": [{"name": "submit", "arguments": {"answer": "ok"}}]}]})
        )
        checkpoint = root / "checkpoint.json"
        checkpoint.write_bytes(
            build_checkpoint(
                1_000,
                cwd=cwd,
                system_prompt=build_system_prompt(cwd, "off"),
                provider="scripted",
                model="scripted",
            )
        )
        counter = iter(range(10**6))
        common = ["--provider", "scripted", "--base-url", str(script), "--cwd", cwd, "--step-limit", "0"]

        def fresh() -> None:
            out = root / f"fresh-{next(counter)}.json"
            _run(
                [
                    sys.executable,
                    "-m",
                    "tinyagent",
                    "-t",
                    "task",
                    "--agents-md",
                    "off",
                    *common,
                    "-o",
                    str(out),
                ],
                env,
            )

        def resumed() -> None:
            out = root / f"resumed-{next(counter)}.json"
            _run(
                [sys.executable, "-m", "tinyagent", "--resume", str(checkpoint), *common, "-o", str(out)], env
            )

        fresh()
        resumed()
        base = time_calls(fresh, repeats)
        resume = time_calls(resumed, repeats)
    median_base, median_resume = statistics.median(base), statistics.median(resume)
    table = print_table(
        "whole process, one model request (scripted): fresh run vs --resume of a 1,000-message checkpoint",
        ["command", "p50 ms", "ratio"],
        [
            ["tinyagent -t task (baseline)", median_base * 1000, 1.0],
            [
                "tinyagent --resume checkpoint.json",
                median_resume * 1000,
                round(median_resume / median_base, 2),
            ],
        ],
    )
    return table, {"fresh_run": latency_summary(base), "resume_run": latency_summary(resume)}


def _run(cmd: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(cmd, capture_output=True, env=env, check=False, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(
            f"tinyagent exited {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"
        )


def run(quick: bool) -> dict[str, Any]:
    """Run both measurements; print the tables; return JSON-able results."""
    validation_table, validation = _validation(quick)
    cli_table, cli = _cli(quick)
    return {"tables": [validation_table, cli_table], "validation": validation, "cli": cli}
