"""tinyagent's usage errors are one line on stderr and exit 2, like graymatter's (no usage block)."""

from __future__ import annotations

import subprocess

import pytest

from support.env import hermetic_env
from support.tinyagent_cli import tinyagent_cmd


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["-t", "x", "--provider", "nope"], "argument --provider: invalid choice: 'nope'"),
        (["-t", "x", "--step-limit", "many"], "argument --step-limit"),
        ([], "a task is required"),
    ],
)
def test_usage_error_is_one_line_and_exit_2(argv: list[str], needle: str) -> None:
    command = tinyagent_cmd(*argv)
    proc = subprocess.run(command, capture_output=True, text=True, env=hermetic_env(), timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("tinyagent: error: ") and needle in line
