"""Fixtures for the resume CLI tests: a running provider stub, a workspace and a real checkpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.provider_stubs import ProviderStub
from support.resume_checkpoints import bash_call, executed_markers
from support.resume_workspace import Workspace, load, usage


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    with ProviderStub() as server:
        yield server


@pytest.fixture
def ws(tmp_path: Path, stub: ProviderStub) -> Workspace:
    return Workspace(tmp_path, stub)


@pytest.fixture
def checkpoint(ws: Workspace) -> Path:
    """A real StepLimit checkpoint after two tool turns (ids repeated across turns)."""
    path = ws.fresh(
        [
            {
                "tool_calls": [bash_call("fresh-1", "call_a"), bash_call("fresh-2", "call_b")],
                "usage": usage(),
            },
            {"tool_calls": [bash_call("fresh-3", "call_a")], "usage": usage()},
        ],
        "run.json",
        "--step-limit",
        "2",
    )
    ws.stub.requests.clear()
    assert executed_markers(ws.project) == ["fresh-1", "fresh-2", "fresh-3"]
    fresh = load(path)  # a fresh run writes resume metadata and no provenance
    assert fresh["resumed_from"] == [] and fresh["resume"]["cwd"] == str(ws.project.resolve())
    assert fresh["exit_status"] == "StepLimit" and fresh["totals"]["steps"] == 2
    return path
