"""Fixtures for the HTTP face tests: `graymatter serve` subprocesses collected and stopped per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import Server


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    """Collects servers started by a test and stops them afterwards."""
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()
