"""What one recall costs, pinned by what it reads, never by time (retrieval/pipeline.py, retrieval/rescore.py,
store/sqlite/search.py; ADR 0011 "Recall latency, session 4")."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.retrieval.relevance import coverage, stems, word_groups
from graymatter.retrieval.rescore import _read_stems, _time_stems, says_when, stems_among
from graymatter.store.sqlite.keys import FACT_COLUMNS

WORDS = ["deploy", "deploys", "Tuesday", "1999", "2024s", "1900s", "läuft", "naïve", "café", "running", "ran"]


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS) | st.text(max_size=12), min_size=1, max_size=8).map(" ".join),
        min_size=1,
        max_size=6,
    ),
    query=st.lists(st.sampled_from(WORDS) | st.text(min_size=1, max_size=8), max_size=4).map(" ".join),
    years=st.booleans(),
)
def test_the_wanted_stems_answer_as_every_stem_would(texts: list[str], query: str, years: bool) -> None:
    groups = word_groups(query)
    wanted = frozenset().union(*groups) | (_time_stems() if years else frozenset())
    read = _read_stems(texts, wanted, years)  # the in-memory read, never the cache
    via_cache = stems_among(texts, wanted, years)
    full = stems(texts)
    for part, cached, every in zip(read, via_cache, full, strict=True):
        assert part == {s for s in every if s in wanted or (years and s[:1] in ("1", "2"))}
        for subset in (part, cached):
            assert coverage(groups, subset) == coverage(groups, every)
            if years:
                assert says_when(subset) == says_when(every)


def test_a_year_inside_a_word_is_read_back() -> None:
    """fts5vocab answers an OR of its term constraints wrongly (SQLite 3.40): the year stem of "1900s" was
    dropped once; the range is now its own statement."""
    assert _read_stems(["a book from the 1900s"], frozenset({"book"}), True) == [frozenset({"book", "1900"})]


def _statements(memory: Memory, run: object) -> list[str]:
    conn: sqlite3.Connection = memory.store._conn()  # type: ignore[attr-defined]
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        assert callable(run)
        run()
    finally:
        conn.set_trace_callback(None)
    return seen


def test_a_recall_with_evidence_reads_no_newest_facts_and_decodes_only_its_answer(memory: Memory) -> None:
    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(40)])
    memory.remember_many("a", [f"unrelated fact {i}" for i in range(40)])
    memory.recall("a", "payment deploy")  # warm: document frequencies remembered
    seen = _statements(memory, lambda: memory.recall("a", "payment deploy", top_k=3))
    assert not [s for s in seen if "ORDER BY created_at DESC" in s]  # the newest facts are not read
    # Whole rows are read by id once, for exactly the facts it returns (the top 3: all distinct and live),
    # not for the 40 matches it re-scored: their texts and rank columns came with the matches.
    by_id = [s for s in seen if s.startswith(f"SELECT {FACT_COLUMNS}") and "WHERE id IN" in s]
    assert len(by_id) == 1 and by_id[0].count("x'") == 3  # ids bound in their 16 bytes (schema 9)
    assert not [s for s in seen if s.startswith("SELECT id, text FROM facts")]
    assert not [s for s in seen if s.startswith("SELECT id, created_at, confidence FROM facts")]
    assert len([s for s in seen if "MATCH" in s]) == 2  # the terms, then the phrase "payment deploy"


def test_an_empty_namespace_stops_after_the_first_cut(memory: Memory) -> None:
    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(300)])
    memory.recall("nobody", "payment deploy")  # warm: document frequencies remembered
    seen = _statements(memory, lambda: memory.recall("nobody", "payment deploy", top_k=3))
    cuts = [s for s in seen if "MATCH" in s]
    assert len(cuts) == 1  # the first cut only: no larger one, no full join
    assert "LEFT JOIN facts f" in cuts[0] or "UNION ALL" in cuts[0]
    assert [s for s in seen if s.startswith("SELECT 1 FROM facts f WHERE")]
    assert memory.recall("nobody", "payment deploy") == []
    memory.remember("nobody", "the payment deploy runs on Tuesdays")
    assert [h.text for h in memory.recall("nobody", "payment deploy")] == [
        "the payment deploy runs on Tuesdays"
    ]


def test_a_recall_without_informative_words_still_reads_the_newest_facts(memory: Memory) -> None:
    memory.remember_many("a", [f"fact number {i}" for i in range(5)])
    seen = _statements(memory, lambda: memory.recall("a", "", top_k=3))
    assert [s for s in seen if "ORDER BY created_at DESC" in s]
    assert [h.text for h in memory.recall("a", "", top_k=2)] == ["fact number 4", "fact number 3"]


def test_a_full_memory_that_rarely_answers_reads_only_the_wanted_stems(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import graymatter.retrieval.rescore as rescore

    monkeypatch.setattr(rescore, "KNOWN_ENTRIES", 4)
    monkeypatch.setattr(rescore, "_KNOWN", {})
    monkeypatch.setattr(rescore, "_USE", [0, 0])
    texts = [f"deploy the kestrel cluster {i} on Tuesday 2019" for i in range(8)]
    wanted = frozenset({"deploi", "tuesdai"})
    first = stems_among(texts[:4], wanted, False)  # memory not full: read whole, remembered
    assert set(rescore._KNOWN) == set(texts[:4]) and all("kestrel" in s for s in first)
    later = stems_among(texts[4:], wanted, True)  # full, and it answered none of them: wanted only
    assert later == [frozenset({"deploi", "tuesdai", "2019"})] * 4
    assert set(rescore._KNOWN) == set(texts[:4])
    groups = [frozenset({"deploi"}), frozenset({"tuesdai"})]
    assert [coverage(groups, s) for s in first + later] == [1.0] * 8


def test_repeated_texts_cost_one_more_read_of_the_next_facts(memory: Memory) -> None:
    """Facts are loaded ``top_k`` at a time: the next ones are read only when repeated texts (or facts
    retired meanwhile) leave the first batch short, and the answer is still ``top_k`` distinct texts."""
    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(3)])
    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(3)])  # repeats
    memory.remember_many("a", [f"payment deploy step {i}" for i in range(6)])
    memory.recall("a", "payment deploy")  # warm
    hits: list[list[str]] = []
    seen = _statements(
        memory, lambda: hits.append([h.text for h in memory.recall("a", "payment deploy", top_k=4)])
    )
    by_id = [s for s in seen if s.startswith(f"SELECT {FACT_COLUMNS}") and "WHERE id IN" in s]
    assert len(hits[0]) == len(set(hits[0])) == 4
    assert 1 <= len(by_id) <= 2 and all(s.count("x'") <= 4 for s in by_id)


def test_the_keyword_scores_are_the_keyword_search(memory: Memory) -> None:
    """``keyword_scores_ranked`` (pairs, what a recall reads) answers exactly as ``keyword_search_ranked``."""
    memory.remember_many("a", [f"deploy note {i} about the payment service {i % 7}" for i in range(60)])
    memory.remember_many("b", [f"payment {i}" for i in range(10)])
    store = memory.store
    for terms, agents, confidences in (
        (["payment", "deploy"], ["a"], None),
        (["payment"], ["a", "b"], ["inferred"]),
        (["payment deploy"], ["b"], None),
        (["nothing"], ["a"], None),
    ):
        hits, ranks, texts = store.keyword_search_ranked(agents, terms, 20, confidences)  # type: ignore[attr-defined]
        pairs, ranks2, texts2, sessionless = store.keyword_scores_ranked(agents, terms, 20, confidences)  # type: ignore[attr-defined]
        assert [(h.fact_id, h.score) for h in hits] == pairs
        assert ranks == ranks2 and texts == texts2
        assert sessionless == set(texts)  # nothing here was written in a session


def test_a_recall_over_facts_without_sessions_asks_for_no_neighbours(memory: Memory) -> None:
    """Only conversation turns lend context: when no keyword match was written in a session, the
    neighbours statement is not run at all; with turns among the matches it is, and they still lend."""
    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(30)])
    memory.recall("a", "payment deploy")  # warm
    seen = _statements(memory, lambda: memory.recall("a", "payment deploy", top_k=3))
    anchors = "SELECT id, agent, (CASE WHEN json_valid(provenance)"  # the neighbours statement
    assert not [s for s in seen if s.startswith(anchors) or "facts_session" in s]
    memory.remember_many("a", ["we talked about the payment deploy", "it runs on Tuesdays"], session="s1")
    seen = _statements(memory, lambda: memory.recall("a", "payment deploy", top_k=40))
    assert [s for s in seen if s.startswith(anchors)] and [s for s in seen if "INDEXED BY facts_session" in s]
    explained = memory.recall_explain("a", "payment deploy", top_k=40)
    assert [e.text for e in explained if e.keyword_source == "context"] == ["it runs on Tuesdays"]


def test_only_a_match_written_in_a_session_can_lend(memory: Memory) -> None:
    """``RecallReads.any_turn`` answers from what the keyword search read: matches written without a
    session have no neighbours, so the keyword signal skips choosing lenders; a turn among them is seen."""
    from graymatter.retrieval.recall_reads import RecallReads

    memory.remember_many("a", [f"deploy note {i} about the payment service" for i in range(5)])
    reads = RecallReads(memory.store)
    plain = dict(reads.keyword_scores(["a"], ["payment"], 10))
    assert len(plain) == 5 and not reads.any_turn(plain)
    memory.remember("a", "the payment deploy, we said", session="s1")
    reads = RecallReads(memory.store)
    found = dict(reads.keyword_scores(["a"], ["payment"], 10))
    assert len(found) == 6 and reads.any_turn(found) and not reads.any_turn(plain)
    assert RecallReads(memory.store).any_turn(plain)  # nothing read yet: it cannot tell, so it may
