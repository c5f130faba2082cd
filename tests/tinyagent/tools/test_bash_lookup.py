"""bash is looked up in PATH once per run, as Popen would find it (the first executable `bash`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tinyagent.tools.toolbox import Toolbox
from tinyagent.types import ToolCall


def _fake_bash(directory: Path) -> None:
    directory.mkdir()
    script = directory / "bash"
    script.write_text('#!/bin/sh\necho "fake bash: $2"\n')
    script.chmod(0o755)


def _run(toolbox: Toolbox, command: str) -> str:
    return toolbox.run(ToolCall(id="c", name="bash", arguments=json.dumps({"command": command}))).content


@pytest.mark.parametrize("relative_first", [False, True])
def test_the_first_bash_in_path_runs_the_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative_first: bool
) -> None:
    _fake_bash(tmp_path / "fake")
    entries = [str(tmp_path / "fake"), os.environ.get("PATH", os.defpath)]
    if relative_first:  # a relative entry first: resolution is left to Popen, which still finds the fake
        entries.insert(0, "not-there")
    monkeypatch.setenv("PATH", os.pathsep.join(entries))
    toolbox = Toolbox(tmp_path)
    assert _run(toolbox, "echo hi") == "exit code: 0\nfake bash: echo hi\n"
    assert _run(toolbox, "echo again") == "exit code: 0\nfake bash: echo again\n"
