"""Session-scoped context: lending only between turns of one session, never a fact without evidence.

* The issue's four-command repro through the real CLI returns only the deploy fact.
* A store written in sequence without sessions never returns a fact without its own evidence
  (hypothesis over texts from a small vocabulary, so queries hit and miss).
* Context lending inside a session, never across sessions, never to or from a fact without one.
* ``--session`` (CLI), ``session`` of ``memory_add`` (MCP stdio) and of ``POST /remember`` (REST) are stored.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.errors import InvalidInput
from graymatter.retrieval.query import query_terms
from graymatter.store.fts import FtsTokenizer
from support.processes import auth, graymatter_command, server_env, start_server

DISH = "What's your favourite dish?"
ANSWER = "Coconut ice cream, definitely."


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        graymatter_command(store, *args), env=server_env(), capture_output=True, text=True, timeout=120
    )


def test_the_issue_repro_returns_only_the_deploy_fact(tmp_path: Path) -> None:
    store = tmp_path / "gm"
    for text in (
        "Deploys happen on Tuesdays",
        "Acme Corp is on the Enterprise plan",
        "The staging database is refreshed nightly",
    ):
        assert _cli(store, "remember", "support-bot", text).returncode == 0
    done = _cli(store, "--json", "recall", "support-bot", "when do we deploy?")
    assert done.returncode == 0, done.stderr
    assert [hit["text"] for hit in json.loads(done.stdout)] == ["Deploys happen on Tuesdays"]


def test_lending_inside_one_session(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    question = memory.remember("a", DISH, session="s1")
    answer = memory.remember("a", ANSWER, session="s1")
    receipts = memory.recall_explain("a", "favourite dish")
    assert [r.id for r in receipts] == [question.id, answer.id]
    assert [r.keyword_source for r in receipts] == ["match", "context"]
    assert receipts[1].keyword_context_from == question.id


@pytest.mark.parametrize("answer_session", ["s2", None])
def test_never_across_sessions_or_without_one(
    make_memory: Callable[..., Memory], answer_session: str | None
) -> None:
    memory = make_memory()
    question = memory.remember("a", DISH, session="s1")
    memory.remember("a", ANSWER, session=answer_session)
    assert [hit.id for hit in memory.recall("a", "favourite dish")] == [question.id]


def test_a_fact_without_a_session_neither_lends_nor_borrows(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    memory.remember_many("a", ["one turn", "second turn"], session="s1")
    lone = memory.remember("a", DISH)
    memory.remember("a", ANSWER, session="s1")
    assert [hit.id for hit in memory.recall("a", "favourite dish")] == [lone.id]


def test_turns_of_a_session_interleaved_with_other_writes_still_lend(
    make_memory: Callable[..., Memory],
) -> None:
    memory = make_memory()
    question = memory.remember("a", DISH, session="chat")
    memory.remember_many("a", [f"unrelated note {n}" for n in range(5)])
    memory.remember("a", "Other chat turn", session="other")
    answer = memory.remember("a", ANSWER, session="chat")
    receipts = memory.recall_explain("a", "favourite dish")
    assert [(r.id, r.keyword_source) for r in receipts] == [(question.id, "match"), (answer.id, "context")]


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201, "line\nbreak", 7])
def test_a_bad_session_is_refused_and_nothing_is_stored(make_memory: Callable[..., Memory], bad: Any) -> None:
    memory = make_memory()
    with pytest.raises(InvalidInput, match=r"^session must be"):
        memory.remember("a", "text", session=bad)
    with pytest.raises(InvalidInput, match=r"^session must be"):
        memory.remember_many("a", ["text"], session=bad)
    assert memory.list("a") == []


_TOKENIZER = FtsTokenizer()


def _stems(text: str) -> list[str]:
    return list(_TOKENIZER.analyse([text])[0][0])


WORDS = ["deploy", "tuesday", "staging", "database", "nightly", "plan", "acme", "invoice", "the", "is"]
sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
# A query that says something (a stop-word-only query asks for the recent window, by design).
queries = st.tuples(st.sampled_from(WORDS[:8]), sentences).map(" ".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(sentences, min_size=1, max_size=12), query=queries)
def test_a_sequential_store_never_returns_a_fact_without_its_own_evidence(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], query: str
) -> None:
    directory = tmp_path_factory.mktemp("seq")
    with Memory(directory, embedder=None, summariser=None) as memory:
        for text in texts:
            memory.remember("a", text)
        wanted = set(_stems(" ".join(query_terms(query))))
        for receipt in memory.recall_explain("a", query):
            assert receipt.keyword_source in ("match", "phrase")
            assert receipt.keyword_context_from is None
            assert wanted & set(_stems(receipt.text)), (query, receipt.text)


def test_cli_session_flag_is_stored(tmp_path: Path) -> None:
    store = tmp_path / "gm"
    assert _cli(store, "remember", "--session", "chat-1", "a", DISH).returncode == 0
    assert _cli(store, "remember", "--session", "chat-1", "a", ANSWER).returncode == 0
    done = _cli(store, "--json", "recall", "a", "favourite dish")
    assert [hit["text"] for hit in json.loads(done.stdout)] == [DISH, ANSWER]
    refused = _cli(store, "remember", "--session", " ", "a", "x")
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(
        "session must be a non-blank printable string of at most 200 characters"
    )


def test_mcp_memory_add_session_is_stored(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    store = tmp_path / "gm"
    command = graymatter_command(store, "mcp", "serve")
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env())

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            for text in (DISH, ANSWER):
                result = await client.call_tool("memory_add", {"agent_id": "a", "text": text, "session": "c"})
                assert not result.is_error

    anyio.run(main)
    with Memory(store, embedder=None, summariser=None) as memory:
        assert [f.provenance.session for f in memory.list("a")] == ["c", "c"]


def test_rest_remember_session_is_stored(tmp_path: Path) -> None:
    server = start_server(str(tmp_path / "store"), tmp_path / "work")
    try:
        created = httpx.post(
            f"{server.url}/remember", json={"agent_id": "a", "text": DISH, "session": "c"}, headers=auth()
        )
        assert created.status_code == 201, created.text
        assert created.json()["provenance"]["session"] == "c"
        blank = httpx.post(
            f"{server.url}/remember", json={"agent_id": "a", "text": DISH, "session": ""}, headers=auth()
        )
        assert blank.status_code == 422
    finally:
        server.stop()
