"""Fixtures for the HTTP face tests: `graymatter serve` subprocesses collected and stopped per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import ServerProcess


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[ServerProcess]]:
    """Collects servers started by a test and stops them afterwards."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.kill()
