"""Weak-match feedback and the readable relevance figure, on both sides of "weak", through every face."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.engine.feedback import WEAK_RELEVANCE, weak_match_feedback
from graymatter.models import RecallFeedback
from graymatter.retrieval.query import query_terms
from graymatter.store.fts import FtsTokenizer
from support.processes import auth, graymatter_command, server_env, start_server

FACTS = [
    "Deploys happen on Tuesdays after the standup",
    "Acme Corp is on the Enterprise plan",
    "The staging database is refreshed nightly",
]
ALIAS_HINT = (
    "If this memory uses other words for the same thing, record them once with memory_alias "
    "(CLI: graymatter alias AGENT TERM EQUIVALENT...) and search again."
)


def _seeded(make_memory: Callable[..., Memory]) -> Memory:
    memory = make_memory()
    for text in FACTS:
        memory.remember("bot", text)
    return memory


def test_a_strong_match_has_relevance_one_and_no_feedback(make_memory: Callable[..., Memory]) -> None:
    memory = _seeded(make_memory)
    hits = memory.recall("bot", "when do we deploy?")
    assert [(h.text, h.relevance) for h in hits] == [(FACTS[0], 1.0)]
    assert weak_match_feedback("when do we deploy?", hits) is None


def test_exactly_half_the_query_is_not_weak(make_memory: Callable[..., Memory]) -> None:
    memory = _seeded(make_memory)
    hits = memory.recall("bot", "deploy schedule")
    assert [h.relevance for h in hits] == [WEAK_RELEVANCE]
    assert weak_match_feedback("deploy schedule", hits) is None


def test_a_weak_match_names_the_missing_words_and_the_nearby_vocabulary(
    make_memory: Callable[..., Memory],
) -> None:
    memory = _seeded(make_memory)
    query = "production deploy schedule"
    hits = memory.recall("bot", query)
    assert [(h.text, h.relevance) for h in hits] == [(FACTS[0], 0.333)]
    assert weak_match_feedback(query, hits) == RecallFeedback(
        best_relevance=0.333,
        matched_terms=["deploy"],
        unmatched_terms=["production", "schedule"],
        suggested_terms=["deploys", "happen", "tuesdays", "standup"],
        message='Weak match: no stored fact contains "production", "schedule". Nearby words in this memory: '
        f"deploys, happen, tuesdays, standup. {ALIAS_HINT}",
    )


def test_a_date_the_query_names_is_never_listed_as_a_missing_word(make_memory: Callable[..., Memory]) -> None:
    """A calendar date is matched through when a fact was written, not through its words: the feedback
    lists the same words with and without it."""
    memory = _seeded(make_memory)
    plain = weak_match_feedback(
        "production deploy schedule", memory.recall("bot", "production deploy schedule")
    )
    for dated_query in ("production deploy schedule in May 2022", "production deploy schedule on 2022-05-03"):
        dated = weak_match_feedback(dated_query, memory.recall("bot", dated_query))
        assert dated is not None and plain is not None
        assert (dated.matched_terms, dated.unmatched_terms, dated.best_relevance) == (
            ["deploy"],
            ["production", "schedule"],
            0.333,
        )
        assert dated.message == plain.message


def test_nothing_found_is_weak(make_memory: Callable[..., Memory]) -> None:
    memory = _seeded(make_memory)
    assert memory.recall("bot", "release calendar") == []
    feedback = weak_match_feedback("release calendar", [])
    assert feedback is not None
    assert (feedback.best_relevance, feedback.matched_terms, feedback.unmatched_terms) == (
        0.0,
        [],
        ["release", "calendar"],
    )
    assert feedback.message == f'No stored fact matches "release", "calendar". {ALIAS_HINT}'


def test_an_alias_makes_the_match_strong(make_memory: Callable[..., Memory]) -> None:
    memory = _seeded(make_memory)
    memory.alias("bot", "release", ["deploy"])
    hits = memory.recall("bot", "release")
    assert [(h.text, h.relevance) for h in hits] == [(FACTS[0], 1.0)]
    assert weak_match_feedback("release", hits) is None


def test_a_query_without_informative_words_has_no_relevance_and_no_feedback(
    make_memory: Callable[..., Memory],
) -> None:
    memory = _seeded(make_memory)
    hits = memory.recall("bot", "what is it")
    assert len(hits) == 3
    assert {h.relevance for h in hits} == {None}
    assert weak_match_feedback("what is it", hits) is None


def test_a_context_turn_gets_half_its_lenders_relevance(make_memory: Callable[..., Memory]) -> None:
    memory = make_memory()
    memory.remember_many("a", ["What's your favourite dish?", "Coconut ice cream, definitely."], session="s")
    receipts = memory.recall_explain("a", "favourite dish")
    assert [(r.keyword_source, r.relevance) for r in receipts] == [("match", 1.0), ("context", 0.5)]


_TOKENIZER = FtsTokenizer()
WORDS = ["deploy", "deploys", "tuesday", "staging", "database", "nightly", "plan", "acme", "the", "is"]
sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


def _coverage(query: str, text: str) -> float:
    words = query_terms(query)
    analysed = _TOKENIZER.analyse([*words, text])
    found = set(analysed[-1][0])
    return round(sum(1 for positions, _ in analysed[:-1] if set(positions) & found) / len(words), 3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(sentences, min_size=1, max_size=10), query=sentences)
def test_relevance_is_the_covered_share_and_feedback_appears_exactly_below_half(
    tmp_path_factory: st.SearchStrategy[Path], texts: list[str], query: str
) -> None:
    directory = tmp_path_factory.mktemp("fb")  # type: ignore[attr-defined]
    with Memory(directory, embedder=None, summariser=None) as memory:
        for text in texts:
            memory.remember("a", text)
        hits = memory.recall("a", query, top_k=20)
    feedback = weak_match_feedback(query, hits)
    if not query_terms(query):
        assert feedback is None
        assert {h.relevance for h in hits} <= {None}
        return
    for hit in hits:
        assert hit.relevance == _coverage(query, hit.text)
    best = max((h.relevance or 0.0 for h in hits), default=0.0)
    assert (feedback is not None) is (best < WEAK_RELEVANCE)


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        graymatter_command(store, *args), env=server_env(), capture_output=True, text=True, timeout=120
    )


def test_cli_prints_feedback_only_when_weak_and_relevance_beside_the_score(tmp_path: Path) -> None:
    store = tmp_path / "gm"
    for text in FACTS:
        assert _cli(store, "remember", "bot", text).returncode == 0
    strong = _cli(store, "recall", "bot", "when do we deploy?", "--explain").stdout
    assert "| relevance 1.00 |" in strong
    assert "memory_alias" not in strong
    weak = _cli(store, "recall", "bot", "production deploy schedule").stdout.splitlines()
    assert weak[-2:] == ["", weak[-1]]
    assert weak[-1].startswith('Weak match: no stored fact contains "production", "schedule".')
    quiet = _cli(store, "--quiet", "recall", "bot", "production deploy schedule").stdout
    assert quiet == f"1. {FACTS[0]}\n"
    hits = json.loads(_cli(store, "--json", "recall", "bot", "production deploy schedule").stdout)
    assert [h["relevance"] for h in hits] == [0.333]


def test_mcp_memory_search_carries_feedback_exactly_when_weak(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    store = tmp_path / "gm"
    command = graymatter_command(store, "mcp", "serve")
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env())
    seen: dict[str, object] = {}

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            for text in FACTS:
                await client.call_tool("memory_add", {"agent_id": "bot", "text": text})
            for query in ("when do we deploy?", "production deploy schedule"):
                result = await client.call_tool("memory_search", {"agent_id": "bot", "query": query})
                text = "".join(block.text for block in result.content if block.type == "text")
                seen[query] = (result.structured_content, text)

    anyio.run(main)
    strong, strong_text = seen["when do we deploy?"]  # type: ignore[misc]
    assert "feedback" not in strong or strong["feedback"] is None
    assert strong["facts"][0]["relevance"] == 1.0
    assert "memory_alias" not in strong_text
    weak, weak_text = seen["production deploy schedule"]  # type: ignore[misc]
    assert weak["feedback"]["unmatched_terms"] == ["production", "schedule"]
    assert weak["feedback"]["action"] == "memory_alias"
    assert "memory_alias" in weak_text  # the model reads the hint too


def test_rest_recall_carries_feedback_exactly_when_weak(tmp_path: Path) -> None:
    server = start_server(str(tmp_path / "store"), tmp_path / "work")
    try:
        for text in FACTS:
            httpx.post(f"{server.url}/remember", json={"agent_id": "bot", "text": text}, headers=auth())
        strong = httpx.get(
            f"{server.url}/recall", params={"agent_id": "bot", "q": "deploy"}, headers=auth()
        ).json()
        assert strong["feedback"] is None
        assert strong["results"][0]["relevance"] == 1.0
        weak = httpx.get(
            f"{server.url}/recall", params={"agent_id": "bot", "q": "deploy calendar"}, headers=auth()
        ).json()
        assert weak["feedback"] is None  # exactly half: not weak
        weaker = httpx.get(
            f"{server.url}/recall",
            params={"agent_id": "bot", "q": "production deploy calendar", "explain": "true"},
            headers=auth(),
        ).json()
        assert weaker["feedback"]["unmatched_terms"] == ["production", "calendar"]
        assert weaker["explanations"][0]["relevance"] == 0.333
    finally:
        server.stop()
