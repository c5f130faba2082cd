"""Property tests: no query text, however hostile, reaches FTS5 as syntax or raises."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.retrieval.query import STOP_WORDS, expand_with_aliases, query_terms, select_terms, tokenize
from graymatter.store.fts import FTS_TOKENIZER
from graymatter.store.sqlite.search import fts_match_expression

FTS_NOISE = st.sampled_from(
    ['"', "*", "^", ":", "(", ")", "-", "+", "NEAR", "AND", "OR", "NOT", "NEAR/3", "''"]
)
QUERY = st.lists(st.one_of(st.text(max_size=12), FTS_NOISE), max_size=12).map(" ".join)


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{FTS_TOKENIZER}')")
    conn.executemany("INSERT INTO t(text) VALUES (?)", [("alpha beta gamma",), ('quote " star * near',)])
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def memory() -> Iterator[Memory]:
    with tempfile.TemporaryDirectory() as directory:
        memory = Memory(Path(directory), config=MemoryConfig(async_consolidate=False), embedder=None)
        memory.remember_many(
            "a", ["alpha beta gamma", "naïve café über", "日本語のテキスト", 'quote " and *']
        )
        memory.alias("a", "alpha", ["omega"])
        yield memory
        memory.close()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(terms=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=8))
def test_match_expression_is_never_fts_syntax(fts: sqlite3.Connection, terms: list[str]) -> None:
    fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts_match_expression(terms),)).fetchall()


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=QUERY)
@example(text="㈠ ½ ⑴x")  # compatibility decompositions that bring in "(" and "⁄" (found by this test)
def test_any_query_tokenises_into_safe_terms(fts: sqlite3.Connection, text: str) -> None:
    terms = query_terms(text)
    assert len(terms) == len(set(terms))
    for term in terms:
        assert term and term not in STOP_WORDS
        assert not any(ch.isspace() or ch in '"*^:()' for ch in term)
    if terms:
        fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (fts_match_expression(terms),)).fetchall()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=QUERY)
def test_recall_never_raises_on_any_unicode_query(memory: Memory, text: str) -> None:
    hits = memory.recall("a", text, top_k=3)
    assert len(hits) <= 3
    assert all(h.text != "alpha" for h in hits)  # the alias itself never comes back


def test_tokenize_folds_case_and_diacritics() -> None:
    assert tokenize("Naïve CAFÉ über_alles x-ray") == ["naive", "cafe", "uber", "alles", "x", "ray"]
    assert query_terms("What is the deploy target of the API?") == ["deploy", "target", "api"]
    assert query_terms("room 7") == ["room", "7"]
    assert query_terms("the of and") == []


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # timing-free under load
@given(
    terms=st.lists(st.text(alphabet="abcdef", min_size=1, max_size=4), max_size=10, unique=True),
    data=st.data(),
)
def test_select_terms_keeps_rarest_within_caps(terms: list[str], data: st.DataObject) -> None:
    df = {t: data.draw(st.integers(min_value=0, max_value=5000)) for t in terms}
    max_terms = data.draw(st.integers(min_value=1, max_value=5))
    budget = data.draw(st.one_of(st.none(), st.integers(min_value=1, max_value=8000)))
    kept = select_terms(terms, df, max_terms, budget)
    assert len(kept) <= max_terms and all(df[t] > 0 for t in kept)
    present = sorted((df[t], terms.index(t)) for t in terms if df[t] > 0)
    assert [df[t] for t in kept] == [d for d, _ in present[: len(kept)]]  # a prefix of the rarest
    if budget is not None and len(kept) > 1:
        assert sum(df[t] for t in kept) <= budget
    if present and not kept:
        raise AssertionError("the rarest present term is always kept")


def test_alias_expansion_adds_whole_group() -> None:
    assert expand_with_aliases(["k8s", "pods"], [["kubernetes", "k8s", "kube"]]) == [
        "k8s",
        "pods",
        "kubernetes",
        "kube",
    ]
    assert expand_with_aliases(["pods"], [["kubernetes", "k8s"]]) == ["pods"]
    assert expand_with_aliases(["new", "york"], [["new york", "nyc"]]) == ["new", "york", "nyc"]
