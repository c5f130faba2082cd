"""The resilience suite (``pytest -m resilience``, part of ``make test``): processes and servers killed
under load, PostgreSQL itself killed and restarted, concurrent mixed writers, and fuzzing of the REST and
MCP faces. Every test records its figures (kills, acknowledged writes, losses, forks, 5xx, time to
recover), printed in the pytest terminal summary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIGURES: dict[str, dict[str, Any]] = {}
"""Test name -> its measured figures, in the order the tests ran."""


def record(name: str, **figures: Any) -> None:
    """Keep a test's figures for the terminal summary."""
    FIGURES[name] = figures


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print every resilience figure (CI logs show them; the closing notes quote them)."""
    if not FIGURES:
        return
    terminalreporter.write_sep("=", "resilience figures")
    for name, figures in FIGURES.items():
        shown = ", ".join(f"{key}={value}" for key, value in figures.items())
        terminalreporter.write_line(f"{name}: {shown}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store shared by the processes of one test: a directory, or a database of the session's
    PostgreSQL cluster (which these tests never kill; see pgcontrol for the one that is killed)."""
    if request.param == "sqlite":
        yield str(tmp_path / "store")
        return
    from support.pgserver import start_cluster

    cluster = start_cluster()
    dsn = cluster.create_database("resilience")
    yield dsn
    cluster.drop_database(dsn)
