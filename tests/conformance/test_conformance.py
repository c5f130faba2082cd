"""The official MCP conformance suite's applicable server scenarios against both of graymatter's HTTP faces.

``graymatter mcp serve --http`` and ``graymatter serve`` run as real processes on loopback without a token
(the suite sends no credentials); each applicable scenario must record successes and no failure or
warning. The suite's scenario list must equal the applicable plus the not-applicable ones, so a new suite
version cannot add a scenario nobody decided about. Part of the release gate (``make gate``): it installs
the pinned suite and Node 22 with npm on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.suite import (
    APPLICABLE,
    NOT_APPLICABLE,
    STATELESS_NOT_APPLICABLE,
    ensure_suite,
    list_server_scenarios,
    run_scenario,
)
from support.processes import ServerProcess, start_mcp_http, start_server

pytestmark = [pytest.mark.gate, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def suite() -> tuple[Path, Path]:
    return ensure_suite()


@pytest.fixture(scope="module", params=["mcp serve --http", "serve"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """(face, MCP endpoint URL) of a running server without a token on 127.0.0.1."""
    root = tmp_path_factory.mktemp("conformance")
    process: ServerProcess
    if request.param == "serve":
        process = start_server(str(root / "store"), root / "work", "--no-auth", token=None)
        url = process.url + "/mcp"
    else:
        process = start_mcp_http(root / "store", "--no-auth")
        url = process.url
    try:
        yield request.param, url
    finally:
        process.stop()


def test_every_server_scenario_is_decided(suite: tuple[Path, Path]) -> None:
    scenarios = list_server_scenarios(*suite)
    assert sorted(scenarios) == sorted([*APPLICABLE, *NOT_APPLICABLE])
    assert not set(APPLICABLE) & set(NOT_APPLICABLE)


@pytest.mark.parametrize("scenario", APPLICABLE)
def test_applicable_scenario_passes(
    suite: tuple[Path, Path], server: tuple[str, str], scenario: str, tmp_path: Path
) -> None:
    face, url = server
    checks = run_scenario(*suite, url, scenario, tmp_path)
    statuses = [check["status"] for check in checks]
    if face == "serve" and scenario in STATELESS_NOT_APPLICABLE:
        assert "FAILURE" not in statuses and "SUCCESS" not in statuses  # the suite itself skips it
        return
    failed = [check for check in checks if check["status"] in ("FAILURE", "WARNING")]
    assert not failed, failed
    assert "SUCCESS" in statuses
