"""Fixtures for the tinyagent CLI tests: an empty project directory to run in."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path
