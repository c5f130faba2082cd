"""Scoped tokens: every out-of-scope read and write is refused (403, nothing changes), over REST and MCP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from support.env import hermetic_env
from support.processes import ServerProcess, auth, start_server

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def gm(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graymatter", "--store", store, *args], capture_output=True,
                          text=True, timeout=60, env=hermetic_env())  # fmt: skip


def create_token(store: str, agents: str, *extra: str) -> dict[str, Any]:
    done = gm(store, "token", "create", "--agents", agents, "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def snapshot(server: ServerProcess) -> dict[str, Any]:
    """Everything the default token can see of both namespaces (to prove refusals changed nothing)."""
    out = {}
    for agent in ("beta", "__shared__"):
        out[agent] = (
            httpx.get(server.url + "/facts", params={"agent_id": agent}, headers=auth(), timeout=30).json(),
            httpx.get(
                server.url + "/checkpoints", params={"agent_id": agent}, headers=auth(), timeout=30
            ).json(),
        )
    return out


def test_rest_and_mcp_enforce_token_scopes(pg_dsn: str, tmp_path: Path, servers: list[ServerProcess]) -> None:
    alpha = create_token(pg_dsn, "alpha", "--label", "alpha writer")
    reader = create_token(pg_dsn, "alpha", "--read-only")
    servers.append(start_server(pg_dsn, tmp_path / "s"))
    server = servers[0]
    url = server.url
    h_alpha, h_reader = auth(alpha["token"]), auth(reader["token"])

    seeded = httpx.post(
        url + "/remember", json={"agent_id": "beta", "text": "beta secret plan"}, headers=auth()
    )
    assert seeded.status_code == 201
    httpx.post(url + "/checkpoints", json={"agent_id": "beta", "state": {"s": 1}}, headers=auth())
    beta_cp = httpx.get(url + "/checkpoints/latest", params={"agent_id": "beta"}, headers=auth()).json()["id"]
    before = snapshot(server)

    refused = [
        ("POST", "/remember", {"json": {"agent_id": "beta", "text": "x"}}),
        ("GET", "/recall", {"params": {"agent_id": "beta", "q": "secret"}}),
        ("GET", "/recall", {"params": {"agent_id": "alpha", "q": "secret", "scope": "all"}}),
        ("GET", "/recall", {"params": {"agent_id": "alpha", "q": "secret", "scope": "shared"}}),
        ("GET", "/facts", {"params": {"agent_id": "beta"}}),
        ("POST", "/revise", {"json": {"agent_id": "beta", "old_text": "beta secret plan", "new_text": "y"}}),
        ("POST", "/forget", {"json": {"agent_id": "beta", "text": "beta secret plan"}}),
        ("POST", "/checkpoints", {"json": {"agent_id": "beta", "state": {}}}),
        ("GET", "/checkpoints/latest", {"params": {"agent_id": "beta"}}),
        ("GET", "/checkpoints", {"params": {"agent_id": "beta"}}),
        ("GET", f"/checkpoints/{beta_cp}", {"params": {"agent_id": "beta"}}),
    ]
    for method, path, kwargs in refused:
        response = httpx.request(method, url + path, headers=h_alpha, timeout=30, **kwargs)
        assert response.status_code == 403, (method, path, response.text)
        assert response.json()["error"]["code"] == "forbidden"
    for method, path, kwargs in [
        ("POST", "/remember", {"json": {"agent_id": "alpha", "text": "x"}}),
        ("POST", "/checkpoints", {"json": {"agent_id": "alpha", "state": {}}}),
        ("POST", "/forget", {"json": {"agent_id": "alpha", "text": "x"}}),
        ("POST", "/revise", {"json": {"agent_id": "alpha", "old_text": "x", "new_text": "y"}}),
    ]:
        response = httpx.request(method, url + path, headers=h_reader, timeout=30, **kwargs)
        assert response.status_code == 403, (method, path, response.text)

    stored = httpx.post(
        url + "/remember", json={"agent_id": "alpha", "text": "alpha uses port 7000"}, headers=h_alpha
    )
    assert stored.status_code == 201
    assert stored.json()["provenance"] == {
        "interface": "rest",
        "client": None,
        "token_id": alpha["id"],
        "session": None,
    }
    found = httpx.get(url + "/recall", params={"agent_id": "alpha", "q": "port 7000"}, headers=h_reader)
    assert [hit["text"] for hit in found.json()["results"]] == ["alpha uses port 7000"]

    async def mcp_calls() -> dict[str, Any]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        results = {}
        async with (
            httpx2.AsyncClient(headers=h_alpha, timeout=30) as http_client,
            Client(streamable_http_client(url + "/mcp", http_client=http_client), mode="legacy") as client,
        ):
            results["add_beta"] = await client.call_tool(
                "memory_add", {"agent_id": "beta", "text": "intruder"}
            )
            results["search_beta"] = await client.call_tool(
                "memory_search", {"agent_id": "beta", "query": "secret"}
            )
            results["save_beta"] = await client.call_tool(
                "checkpoint_save", {"agent_id": "beta", "state": "{}"}
            )
            results["resume_beta"] = await client.call_tool("checkpoint_resume", {"agent_id": "beta"})
            results["reflect_beta"] = await client.call_tool(
                "memory_reflect", {"agent_id": "beta", "action": "forget", "text": "beta secret plan"}
            )
            results["add_alpha"] = await client.call_tool(
                "memory_add", {"agent_id": "alpha", "text": "via mcp"}
            )
            results["search_alpha"] = await client.call_tool(
                "memory_search", {"agent_id": "alpha", "query": "mcp"}
            )
        return results

    async def reader_mcp_calls() -> dict[str, Any]:
        """The read-only token over MCP: every write tool refused, reads allowed."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        calls = {
            "add": ("memory_add", {"agent_id": "alpha", "text": "reader write"}),
            "save": ("checkpoint_save", {"agent_id": "alpha", "state": "{}"}),
            "forget": (
                "memory_reflect",
                {"agent_id": "alpha", "action": "forget", "text": "alpha uses port 7000"},
            ),
            "pin": (
                "memory_reflect",
                {"agent_id": "alpha", "action": "pin", "target": "alpha uses port 7000"},
            ),
            "search": ("memory_search", {"agent_id": "alpha", "query": "port 7000"}),
        }
        async with (
            httpx2.AsyncClient(headers=h_reader, timeout=30) as http_client,
            Client(streamable_http_client(url + "/mcp", http_client=http_client), mode="legacy") as client,
        ):
            return {key: await client.call_tool(tool, arguments) for key, (tool, arguments) in calls.items()}

    read_only = anyio.run(reader_mcp_calls)
    for name in ("add", "save", "forget", "pin"):
        assert read_only[name].is_error, name
        assert f"token {reader['id']} is read-only" in read_only[name].content[0].text, name
    assert not read_only["search"].is_error

    results = anyio.run(mcp_calls)
    for name in ("add_beta", "search_beta", "save_beta", "resume_beta", "reflect_beta"):
        assert results[name].is_error, name
        assert results[name].structured_content is None
        assert "no access to agent namespace 'beta'" in results[name].content[0].text
    assert not results["add_alpha"].is_error
    assert not results["search_alpha"].is_error
    facts = httpx.get(url + "/facts", params={"agent_id": "alpha"}, headers=auth()).json()["facts"]
    via_mcp = [f for f in facts if f["text"] == "via mcp"]
    assert via_mcp and via_mcp[0]["provenance"]["interface"] == "mcp"
    assert via_mcp[0]["provenance"]["token_id"] == alpha["id"]

    assert snapshot(server) == before  # nothing out of scope changed

    listed = gm(pg_dsn, "token", "list", "--json")
    assert listed.returncode == 0
    assert alpha["token"] not in listed.stdout and reader["token"] not in listed.stdout
    assert {t["id"] for t in json.loads(listed.stdout)["tokens"]} == {alpha["id"], reader["id"]}
    revoked = gm(pg_dsn, "token", "revoke", alpha["id"])
    assert revoked.returncode == 0, revoked.stderr
    after = httpx.get(url + "/recall", params={"agent_id": "alpha", "q": "port"}, headers=h_alpha)
    assert after.status_code == 401
    bogus = auth("gm_" + "0" * 16 + "_" + "A" * 43)
    assert httpx.get(url + "/facts", params={"agent_id": "alpha"}, headers=bogus
                     ).status_code == 401  # fmt: skip
    again = gm(pg_dsn, "token", "revoke", alpha["id"])
    assert again.returncode == 3 and "no active token" in again.stderr


def test_token_secrets_are_stored_hashed(pg_dsn: str) -> None:
    import psycopg

    from graymatter.store.postgres.store import PostgresStore

    PostgresStore(pg_dsn).close()  # schema
    token = create_token(pg_dsn, "a,b")
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute(
            "SELECT token_hash, agents, access FROM gm_tokens WHERE id = %s", (token["id"],)
        ).fetchone()
    secret = token["token"].rsplit("_", 1)[1]
    assert secret not in row[0] and len(row[0]) == 64
    assert row[1] == ["a", "b"] and row[2] == "read-write"
