"""Near-synonyms from the shipped table: weaker keyword evidence, named in receipts, never coverage.

* The table is binary-searched exactly (hypothesis over generated tables) and the shipped one holds what
  its builder says (sorted stems, similarities at or above the builder's floor, no closed-class sibling).
* A fact that only says "grandmother" is found for "grandma", as ``keyword_source`` "synonym" with the
  word it matched, below a fact that says "grandma", with relevance 0 and the weak-match feedback.
* Without the synonym (weight 0), or when the store lacks it, nothing changes; an unrelated fact is
  never returned.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from pathlib import Path

import pytest
from benchmarks.synonym_table import MIN_SIMILARITY, SIBLINGS
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.engine.feedback import weak_match_feedback
from graymatter.retrieval.pipeline import RecallRequest, run_recall
from graymatter.retrieval.synonyms import TABLE, SynonymTable, matched_synonym, synonym_terms, synonyms_of
from graymatter.store.fts import FtsTokenizer

stems = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8)
neighbour_lists = st.lists(
    st.tuples(st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8), st.integers(0, 99)),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(table=st.dictionaries(stems, neighbour_lists, max_size=30), probe=stems)
def test_the_table_is_binary_searched_exactly(
    tmp_path_factory: pytest.TempPathFactory, table: dict[str, list[tuple[str, int]]], probe: str
) -> None:
    path = tmp_path_factory.mktemp("table") / "synonyms.tsv"
    lines = [
        f"{key}\t{' '.join(f'{w}:0.{v:02d}' for w, v in pairs)}\n" for key, pairs in sorted(table.items())
    ]
    path.write_text("# header\n" + "".join(lines), encoding="utf-8")
    lookup = SynonymTable(path)
    for key, pairs in table.items():
        assert lookup.neighbours(key) == [(w, v / 100) for w, v in pairs]
    if probe not in table:
        assert lookup.neighbours(probe) == []


def test_a_missing_table_finds_nothing(tmp_path: Path) -> None:
    assert SynonymTable(tmp_path / "absent.tsv").neighbours("grandma") == []


def test_the_shipped_table_is_what_its_builder_writes() -> None:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# graymatter synonym table")
    keys = [line.split("\t")[0] for line in lines[1:]]
    assert keys == sorted(keys) and len(keys) == len(set(keys)) > 1000
    tokenizer = FtsTokenizer()
    siblings = {stem for group in tokenizer.stems(sorted(SIBLINGS)) for stem in group}
    for line in lines[1:]:
        key, pairs = line.split("\t")
        values = [float(pair.split(":")[1]) for pair in pairs.split()]
        assert values == sorted(values, reverse=True) and min(values) >= MIN_SIMILARITY
        assert key not in siblings
    assert SynonymTable().neighbours("grandma")[0] == ("grandmother", 0.93)


def test_synonyms_of_query_words_skip_what_the_query_already_searches() -> None:
    assert synonyms_of(["grandma"]) == {"grandmother": "grandma"}
    assert synonyms_of(["grandma", "grandmother"]) == {}  # granny is under the floor for both
    assert synonyms_of(["grandma"], min_similarity=0.8) == {"grandmother": "grandma", "granny": "grandma"}
    assert synonyms_of(["zzzz"]) == {} and synonyms_of([]) == {}


def test_synonym_terms_keep_what_the_index_holds_rarest_first() -> None:
    found = {"grandmother": "grandma", "granny": "grandma"}
    assert synonym_terms(found, {"grandmother": 3, "granny": 0}, None) == ["grandmother"]
    assert synonym_terms(found, {"grandmother": 3, "granny": 1}, None) == ["granny", "grandmother"]
    assert synonym_terms(found, {"grandmother": 3, "granny": 1}, 2) == ["granny"]


def test_matched_synonym_names_the_word_and_what_it_stands_for() -> None:
    found = {"grandmother": "grandma"}
    assert matched_synonym(frozenset({"grandmoth", "sweden"}), found) == "grandmother for grandma"
    assert matched_synonym(frozenset({"sweden"}), found) == ""


FACTS = [
    "Caroline got a necklace from her grandmother in Sweden",
    "Melanie paints sunsets at the lake",
    "The staging database is refreshed nightly",
]


def _store(make_memory: Callable[..., Memory], *extra: str) -> Memory:
    memory = make_memory()
    for text in [*FACTS, *extra]:
        memory.remember("a", text)
    return memory


def test_a_synonym_finds_a_fact_and_its_receipt_says_which(make_memory: Callable[..., Memory]) -> None:
    memory = _store(make_memory)
    receipts = memory.recall_explain("a", "Where is the grandma from?")
    assert [(r.text, r.keyword_source, r.keyword_synonym, r.relevance) for r in receipts] == [
        (FACTS[0], "synonym", "grandmother for grandma", 0.0)
    ]
    hits = memory.recall("a", "Where is the grandma from?")
    feedback = weak_match_feedback("Where is the grandma from?", hits)
    assert feedback is not None and feedback.unmatched_terms == ["grandma"]


def test_an_exact_match_ranks_above_a_synonym_match(make_memory: Callable[..., Memory]) -> None:
    exact = "Caroline got a necklace from her grandma in Sweden"
    memory = _store(make_memory, exact)
    receipts = memory.recall_explain("a", "necklace from grandma")
    assert [(r.text, r.keyword_source) for r in receipts] == [(exact, "match"), (FACTS[0], "match")]
    assert receipts[0].ranks.fused_score > receipts[1].ranks.fused_score


def test_without_the_synonym_nothing_is_found(make_memory: Callable[..., Memory]) -> None:
    memory = _store(make_memory)
    request = RecallRequest(agent_ids=("a",), query="Where is the grandma from?", synonym_weight=0.0)
    assert run_recall(memory.store, request).results == []
    searched = run_recall(memory.store, RecallRequest(agent_ids=("a",), query="grandma"))
    assert [item.candidate.fact.text for item in searched.results] == [FACTS[0]]
    assert searched.synonyms == {searched.results[0].candidate.fact.id: "grandmother for grandma"}
    assert run_recall(memory.store, RecallRequest(agent_ids=("a",), query="granny")).results == []
