"""Trajectory save cost at 100, 1,000 and 10,000 messages.

tinyagent saves the whole trajectory after every turn, so this is a per-step cost that grows with the
conversation. Measured in the same run, on the same data:

- `serialise`: pydantic `model_dump_json` to bytes only (no I/O);
- `tinyagent save`: `tinyagent.trajectory.files.save_trajectory` = serialise + exclusive private temp file +
  fsync + rename + directory fsync (the durable, atomic path every checkpoint takes);
- `baseline write`: what mini-swe-agent does (`json.dumps(..., indent=2)` of plain dicts, then
  `Path.write_text`): not atomic, not fsynced; the ratio shows what atomicity + durability cost;
- `load`: `tinyagent.trajectory.files.load_trajectory` (bounded read + JSON parse + schema validation), the
  first thing `--resume` does;
- `journal record`: what a run pays per reply before its tools run since ADR 0017: the pending-journal
  record of the last message (encode + `pwrite` into preallocated zeros + `fdatasync`); the full save
  above now runs in the background, at most once a second.

Messages are realistic turns: an assistant message with one bash call and a tool result of ~1.5 kB.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.harness import cache_dir, latency_summary, print_table, time_calls

SIZES = (100, 1_000, 10_000)
REPEATS = {100: 41, 1_000: 21, 10_000: 7}
QUICK_REPEATS = {100: 9, 1_000: 5, 10_000: 3}
OUTPUT_LINE = "drwxr-xr-x  2 user user  4096 Nov 30 00:00 some-directory-name-with-a-length\n"


def build_trajectory(messages: int) -> Any:
    """A trajectory with `messages` messages (system + task + alternating assistant/tool)."""
    from tinyagent.tools.specs import TOOL_SPECS
    from tinyagent.trajectory.models import Timing, Trajectory
    from tinyagent.types import Message, ToolCall

    history = [
        Message(role="system", content="system prompt " * 80),
        Message(role="user", content="the task"),
    ]
    turn = 0
    while len(history) < messages:
        call_id = f"call_{turn:06d}"
        history.append(
            Message(
                role="assistant",
                content=f"Step {turn}: let me look at the directory listing again.",
                tool_calls=[
                    ToolCall(id=call_id, name="bash", arguments=json.dumps({"command": f"ls -la dir{turn}"}))
                ],
            )
        )
        history.append(
            Message(
                role="tool", content="exit code: 0\n" + OUTPUT_LINE * 20, tool_call_id=call_id, name="bash"
            )
        )
        turn += 1
    history = history[:messages]
    return Trajectory(
        tinyagent_version="bench",
        task="the task",
        provider="scripted",
        model="scripted",
        system_prompt=history[0].content or "",
        messages=history,
        tools=list(TOOL_SPECS),
        timing=Timing(started_at="2026-01-01T00:00:00.000Z"),
    )


def filesystem_of(path: Path) -> str:
    """The filesystem type holding `path` (from /proc/mounts; 'unknown' elsewhere)."""
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) >= 3 and str(path).startswith(fields[1]) and len(fields[1]) > len(best):
                    best, kind = fields[1], fields[2]
    except OSError:
        pass
    return kind


def run(quick: bool) -> dict[str, Any]:
    """Measure serialise / atomic save / naive write / load at each size; print and return the table."""
    from tinyagent.trajectory.encoding import dump_trajectory
    from tinyagent.trajectory.files import load_trajectory, save_trajectory
    from tinyagent.trajectory.journal import ROTATE_BYTES, PendingJournal, encode_record, journal_ref_for

    workdir = cache_dir() / "trajectory_save"
    workdir.mkdir(parents=True, exist_ok=True)
    repeats = QUICK_REPEATS if quick else REPEATS
    rows: list[list[Any]] = []
    details: dict[str, Any] = {}
    for size in SIZES:
        trajectory = build_trajectory(size)
        ours = workdir / f"tinyagent-{size}.json"
        naive = workdir / f"baseline-{size}.json"
        plain = trajectory.model_dump(mode="json")
        n = repeats[size]
        save_trajectory(trajectory, ours)  # warm-up: file exists, page cache and directory entry primed
        Path(naive).write_text(json.dumps(plain, indent=2))
        serialise = time_calls(lambda t=trajectory: dump_trajectory(t), n)
        save = time_calls(lambda t=trajectory, p=ours: save_trajectory(t, p), n)
        baseline = time_calls(lambda d=plain, p=naive: Path(p).write_text(json.dumps(d, indent=2)), n)
        load = time_calls(lambda p=ours: load_trajectory(p), n)
        journal = PendingJournal(ours, journal_ref_for(ours))
        journal.open()

        def record(t: Any = trajectory, j: PendingJournal = journal) -> None:
            j.append(encode_record(j.ref, t, len(t.messages) - 1, pending=True, compaction=None))
            if j.used > ROTATE_BYTES:
                j.erase()

        journal_times = time_calls(record, max(n, 21))
        journal.close(remove=True)
        save_p50 = statistics.median(save) * 1000
        base_p50 = statistics.median(baseline) * 1000
        per_message_us = save_p50 * 1000 / size
        rows.append(
            [
                f"{size:,}",
                round(ours.stat().st_size / 1e6, 2),
                round(statistics.median(serialise) * 1000, 2),
                round(save_p50, 2),
                round(base_p50, 2),
                f"{save_p50 / base_p50:.2f}x",
                round(per_message_us, 1),
                round(statistics.median(load) * 1000, 2),
                round(statistics.median(journal_times) * 1000, 3),
            ]
        )
        details[str(size)] = {
            "file_bytes": ours.stat().st_size,
            "serialise": latency_summary(serialise),
            "tinyagent_save": latency_summary(save),
            "baseline_write": latency_summary(baseline),
            "load": latency_summary(load),
            "journal_record": latency_summary(journal_times),
            "save_vs_baseline_ratio": round(save_p50 / base_p50, 3),
        }
    table = print_table(
        "Trajectory save cost (medians; tinyagent save = atomic + fsync, baseline = mini-style write_text)",
        [
            "messages",
            "file MB",
            "serialise ms",
            "tinyagent save ms",
            "baseline write ms",
            "save/baseline",
            "save µs/message",
            "load+validate ms",
            "journal record ms",
        ],
        rows,
    )
    filesystem = filesystem_of(workdir.resolve())
    print(f"(files written under {workdir} on {filesystem}; fsync cost depends on the disk)")
    return {"table": table, "sizes": details, "repeats": repeats, "filesystem": filesystem}
