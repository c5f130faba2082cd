"""Fuzzing the served faces on both backends: zero 5xx, zero internal errors.

* REST against its own OpenAPI document (schemathesis), each case sent with the default token, a
  read-only scoped token and a wrong token;
* hand-made hostile bodies on every write route: deep nesting, huge arrays, invalid UTF-8, NUL and lone
  surrogates, enormous numbers, wrong types and media types;
* MCP tool calls over streamable HTTP (raw JSON-RPC, so no client library smooths the bytes) with
  generated arguments, deep nesting, huge arrays and invalid UTF-8.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter.faces.http.openapi import openapi_document
from graymatter.faces.mcp_server.specs import TOOL_SPECS
from resilience.conftest import FIGURES, record
from support.env import hermetic_env
from support.processes import TOKEN, ServerProcess, start_server

pytestmark = [pytest.mark.resilience, pytest.mark.timeout(240)]

schema = schemathesis.openapi.from_dict(openapi_document())
BODY_ROUTES = ["/remember", "/revise", "/forget", "/checkpoints"]
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}
_SERVED: dict[str, tuple[ServerProcess, str]] = {}
_TALLY = {"requests": 0, "http_5xx": 0, "internal_errors": 0}


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """A server on a fresh store of each backend, its URL and a read-only scoped token."""
    work = Path(tmp_path_factory.mktemp(f"fuzz-{request.param}"))
    if request.param == "sqlite":
        location, drop = str(work / "store"), None
    else:
        from support.pgserver import start_cluster

        cluster = start_cluster()
        location = cluster.create_database("fuzz")
        drop = cluster
    reader = subprocess.run(
        [sys.executable, "-m", "graymatter", "--dir", str(work / "cli"), "token", "create", "--store",
         location, "--agents", "*", "--read-only", "--json"],
        capture_output=True, text=True, env=hermetic_env(), timeout=60, check=True,
    )  # fmt: skip
    server = start_server(location, work)
    yield {"url": server.url, "reader": json.loads(reader.stdout)["token"], "backend": request.param}
    server.kill()
    assert "Traceback" not in server.log.read_text(errors="replace")
    if drop is not None:
        drop.drop_database(location)


def _tally(response: httpx.Response) -> httpx.Response:
    _TALLY["requests"] += 1
    _TALLY["http_5xx"] += response.status_code >= 500
    _TALLY["internal_errors"] += "internal error" in response.text
    FIGURES["fuzz (all backends)"] = dict(_TALLY)
    return response


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_rest_cases_never_fail_with_any_token(case: schemathesis.Case, served: dict[str, str]) -> None:
    for token in (TOKEN, served["reader"], "wrong-token-0123456789abcdef"):
        response = _tally(case.call(base_url=served["url"], headers={"Authorization": f"Bearer {token}"}))
        assert response.status_code < 500, (case.method, case.path, response.status_code, response.text)


HOSTILE_MCP_IDS = ["state-100k-deep", "arguments-50k-brackets", "huge-batch", "huge-array", "invalid-utf8",
                   "lone-surrogate", "nul-agent"]  # fmt: skip


def _deep(levels: int) -> bytes:
    return b'{"agent_id": "a", "text": "t", "state": ' + b'{"k": ' * levels + b"1" + b"}" * levels + b"}"


HOSTILE: list[tuple[bytes, str]] = [
    (b"[" * 50_000, "application/json"),
    (b"{" * 50_000, "application/json"),
    (_deep(5_000), "application/json"),
    (b'{"agent_id": "a", "text": "t", "state": {"k": [' + b"1," * 300_000 + b"1]}}", "application/json"),
    (b'{"agent_id": "a", "text": "\xff\xfe invalid utf-8"}', "application/json"),
    (b'{"agent_id": "\xc3\x28", "old_text": "x", "new_text": "y"}', "application/json"),
    (b'{"agent_id": "a", "text": "lone \\ud800 surrogate"}', "application/json"),
    (b'{"agent_id": "a", "text": "nul \\u0000 inside"}', "application/json"),
    (b'{"agent_id": "a\\u0000", "text": "t"}', "application/json"),
    (b'{"agent_id": "a", "text": "t", "confidence": 1e999}', "application/json"),
    (b'{"agent_id": "a", "text": ' + b"9" * 5_000 + b"}", "application/json"),
    (b'{"agent_id": ["a"], "text": {"t": 1}, "state": "not an object"}', "application/json"),
    (b"\x00\x01\x02", "application/json"),
    (b"agent_id=a&text=t", "application/x-www-form-urlencoded"),
    (b'{"agent_id": "a", "text": "t"}', "text/plain"),
]


@pytest.mark.parametrize("path", BODY_ROUTES)
def test_hostile_bodies_are_refused_cleanly(served: dict[str, str], path: str) -> None:
    for body, media in HOSTILE:
        headers = {"Authorization": f"Bearer {TOKEN}", "content-type": media}
        response = _tally(httpx.post(served["url"] + path, content=body, headers=headers, timeout=60))
        assert response.status_code < 500, (path, body[:60], response.status_code, response.text[:200])
        assert response.headers["content-type"].startswith("application/json")


def _mcp(served: dict[str, str], payload: bytes) -> httpx.Response:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    return _tally(httpx.post(served["url"] + "/mcp", content=payload, headers=headers, timeout=60))


def _call(name: str, arguments: Any) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(message).encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
TOOLS = [spec.name for spec in TOOL_SPECS]
ARGUMENT_NAMES = ["agent_id", "agent", "text", "query", "queries", "state", "action", "target", "term",
                  "equivalents", "top_k", "confidence", "on_missing", "explain", "extra"]  # fmt: skip


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(TOOLS),
    arguments=st.dictionaries(
        st.sampled_from(
            [
                "agent_id",
                "agent",
                "text",
                "query",
                "queries",
                "state",
                "action",
                "target",
                "term",
                "equivalents",
                "top_k",
                "confidence",
                "on_missing",
                "explain",
                "extra",
            ]
        ),
        json_values,
        max_size=5,
    ),
)
def test_mcp_tool_arguments_never_cause_internal_errors(
    served: dict[str, str], name: str, arguments: Any
) -> None:
    response = _mcp(served, _call(name, arguments))
    assert response.status_code < 500
    assert "internal error" not in response.text


@pytest.mark.parametrize(
    "payload",
    [
        _call("checkpoint_save", {"agent_id": "a", "state": '{"k": ' * 100_000 + "1" + "}" * 100_000}),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"checkpoint_save","arguments":'
        + b"[" * 50_000
        + b"}}",
        _call("memory_search_batch", {"agent_id": "a", "queries": ["q"] * 100_000}),
        _call("memory_add", {"agent_id": "a", "text": ["x"] * 100_000}),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_add","arguments":'
        b'{"agent_id":"a","text":"\xff\xfe"}}}',
        _call("memory_add", {"agent_id": "a", "text": "lone \ud800 surrogate"}),
        _call("memory_add", {"agent_id": "a\x00", "text": "nul"}),
    ],
    ids=[
        "state-100k-deep",
        "arguments-50k-brackets",
        "huge-batch",
        "huge-array",
        "invalid-utf8",
        "lone-surrogate",
        "nul-agent",
    ],
)
def test_hostile_mcp_calls_are_refused_cleanly(served: dict[str, str], payload: bytes) -> None:
    response = _mcp(served, payload)
    assert response.status_code < 500, response.text[:300]
    assert "internal error" not in response.text, response.text[:300]


def test_zero_5xx_and_zero_internal_errors(request: pytest.FixtureRequest) -> None:
    """Runs last in this module: the totals over every request above."""
    record("fuzz (all backends)", **_TALLY)
    assert _TALLY["requests"] > 0
    assert _TALLY["http_5xx"] == 0
    assert _TALLY["internal_errors"] == 0
