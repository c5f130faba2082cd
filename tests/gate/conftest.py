"""Print the gate's case tables in pytest's terminal summary, so ``make gate`` shows them on success too."""

from __future__ import annotations

from typing import Any

from gate import report
from gate.opencode import REPORT


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if REPORT:
        terminalreporter.section("OpenCode release gate")
        for block in REPORT:
            terminalreporter.write_line(block)
    if report.ROWS:
        terminalreporter.section("Real-client gate (wired by graymatter init)")
        terminalreporter.write_line(report.render())
