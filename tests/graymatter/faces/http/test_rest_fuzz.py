"""Property-based fuzz of the REST API against its own OpenAPI document (schemathesis): never a 500,
every response conforms to the documented schema. Runs against a real server on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from graymatter.faces.http.openapi import openapi_document
from support.processes import TOKEN, ServerProcess, start_server

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

schema = schemathesis.openapi.from_dict(openapi_document())


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    from support.pgserver import start_cluster

    cluster = start_cluster()
    dsn = cluster.create_database()
    server = start_server(dsn, Path(tmp_path_factory.mktemp("fuzz")))
    yield server
    server.kill()
    cluster.drop_database(dsn)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_rest_api_never_fails_and_matches_its_schema(
    case: schemathesis.Case, live_server: ServerProcess
) -> None:
    # Business rules may refuse a schema-valid request (404 unknown text, 422 identical revision): not a bug.
    # negative_data_rejection is excluded because the Authorization header we must send replaces the header
    # mutations schemathesis generates (a "negative" case then reaches the server valid and is accepted);
    # rejection of invalid query parameters and bodies is pinned deterministically below.
    case.call_and_validate(
        base_url=live_server.url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
        excluded_checks=[positive_data_acceptance, negative_data_rejection],
    )


@pytest.mark.parametrize(
    ("method", "path", "params", "body"),
    [
        ("GET", "/recall", {"agent_id": "a", "q": "x", "bogus": "1"}, None),
        ("GET", "/recall", {"q": "x"}, None),
        ("GET", "/recall", {"agent_id": "a", "k": "0"}, None),
        ("GET", "/facts", {"agent_id": "a", "unknown": "1"}, None),
        ("GET", "/facts", {}, None),
        ("POST", "/remember", None, {"agent_id": "a", "text": "t", "extra": 1}),
        ("POST", "/remember", None, {"agent_id": "a"}),
        ("POST", "/forget", None, {"agent_id": "", "text": "t"}),
    ],
)
def test_rest_api_rejects_invalid_parameters(
    live_server: ServerProcess, method: str, path: str, params: dict | None, body: dict | None
) -> None:
    import httpx

    response = httpx.request(
        method,
        live_server.url + path,
        params=params,
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert response.status_code == 422, response.text
    assert set(response.json()) == {"error"}
