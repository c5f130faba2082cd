"""Deeply nested JSON is a 422, never a 500 (issue 16, defect 3): a real ``graymatter serve`` on SQLite.

Bodies of ``[`` x 50,000 and states nested 5,000 deep used to raise RecursionError inside the request (HTTP
500, a traceback in the log). The nesting bound (``MAX_JSON_DEPTH``) answers 422 with one line, stores
nothing, and a state exactly at the bound is still accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graymatter.validation import MAX_JSON_DEPTH
from support.processes import ServerProcess, auth, start_server

WRITE_PATHS = ["/remember", "/revise", "/forget", "/checkpoints"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = Path(tmp_path_factory.mktemp("deep"))
    started = start_server(str(work / "store"), work)
    yield started
    started.kill()


def _nested(containers: int) -> Any:
    """Exactly ``containers`` objects nested in each other around a string."""
    value: Any = "leaf"
    for _ in range(containers):
        value = {"k": value}
    return value


def _post(server: ServerProcess, path: str, body: bytes) -> httpx.Response:
    headers = {**auth(), "content-type": "application/json"}
    return httpx.post(server.url + path, content=body, headers=headers, timeout=60)


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_a_body_of_fifty_thousand_brackets_is_refused(server: ServerProcess, path: str) -> None:
    response = _post(server, path, b"[" * 50_000)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == {
        "code": "invalid_input",
        "message": f"request body nests more than {MAX_JSON_DEPTH} levels deep",
    }


@pytest.mark.parametrize("path", WRITE_PATHS)
def test_a_body_nested_just_past_the_bound_is_refused(server: ServerProcess, path: str) -> None:
    body = {
        "agent_id": "a",
        "text": "t",
        "old_text": "t",
        "new_text": "u",
        "state": _nested(MAX_JSON_DEPTH),
    }  # 101
    import json

    response = _post(server, path, json.dumps(body).encode())
    assert response.status_code == 422, response.text
    assert "nests more than" in response.json()["error"]["message"]


def test_a_state_nested_five_thousand_deep_is_refused_and_nothing_is_stored(server: ServerProcess) -> None:
    body = '{"agent_id": "deep", "state": ' + '{"k": ' * 5_000 + "1" + "}" * 5_000 + "}"
    response = _post(server, "/checkpoints", body.encode())
    assert response.status_code == 422, response.text
    listed = httpx.get(server.url + "/checkpoints", params={"agent_id": "deep"}, headers=auth(), timeout=30)
    assert listed.json()["checkpoints"] == []


def test_a_state_at_the_bound_is_saved(server: ServerProcess) -> None:
    import json

    state = _nested(MAX_JSON_DEPTH - 1)  # the body object is the 100th level
    response = _post(server, "/checkpoints", json.dumps({"agent_id": "ok", "state": state}).encode())
    assert response.status_code == 201, response.text
    assert response.json()["state"] == state


def test_the_log_has_no_recursion_error(server: ServerProcess) -> None:
    _post(server, "/remember", b"{" * 50_000)
    log = server.log.read_text(errors="replace")
    assert "RecursionError" not in log
    assert "Traceback" not in log
