"""The per-client result table of a gate run, printed in pytest's terminal summary by conftest.py."""

from __future__ import annotations

ROWS: list[list[str]] = []
"""One row per gate case: client, version, case, result, seconds."""
HEADER = ["Client", "Version", "Case", "Result", "Seconds"]


def add_row(client: str, version: str, case: str, problems: list[str], seconds: float) -> None:
    """Record one case's outcome (``ok`` or its first problem, shortened)."""
    result = "ok" if not problems else "FAIL: " + " ".join(problems[0].split())[:90]
    ROWS.append([client, version, case, result, f"{seconds:.1f}"])


def render() -> str:
    """The table as aligned text."""
    widths = [max(len(row[i]) for row in [HEADER, *ROWS]) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [HEADER, ["-" * w for w in widths], *ROWS]
    ]
    return "\n".join(lines)
