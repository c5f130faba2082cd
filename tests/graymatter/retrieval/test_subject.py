"""Subject re-scoring: a keyword match whose leading word the query names moves up
(packages/graymatter/src/graymatter/retrieval/subject.py, applied in retrieval/weighing.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.retrieval.pipeline import RecallRequest, run_recall
from graymatter.retrieval.query import _TOKEN, STOP_WORDS, normalise
from graymatter.retrieval.relevance import stems
from graymatter.retrieval.subject import LEAD_CHARS, SUBJECT_WEIGHT, leading_word, subject_rescore


@pytest.fixture
def memory(tmp_path: Path):
    mem = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    yield mem
    mem.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Caroline: I went to a support group yesterday", "caroline"),
        ("Melanie's kids love the beach", "melanie"),
        ("The staging database is refreshed nightly", "staging"),
        ("Deploys happen on Tuesdays", "deploys"),
        ("  — 7 rooms are booked", "7"),
        ("It is what it is", None),
        ("a b c", None),
        ("", None),
        ("Élodie runs the café", "elodie"),
        ("the " * 20 + "Caroline", None),  # past the first LEAD_CHARS characters: no leading word
    ],
)
def test_leading_word(text: str, expected: str | None) -> None:
    assert leading_word(text) == expected


def _texts(table: Mapping[str, str]):
    asked: list[list[str]] = []

    def read(ids: Sequence[str]) -> dict[str, str]:
        asked.append(list(ids))
        return {fid: table[fid] for fid in ids if fid in table}

    return read, asked


def test_subject_rescore_multiplies_only_facts_whose_leading_word_the_query_names() -> None:
    table = {
        "a": "Caroline went hiking with Melanie",
        "b": "Melanie went hiking with Caroline",
        "c": "Caroline's hike was long",
    }
    read, asked = _texts(table)
    query = frozenset().union(*stems(["caroline", "hiking"]))
    out = subject_rescore({"a": 1.0, "b": 1.0, "c": 0.5}, read, query, 1.0)
    assert out == {"a": 2.0, "b": 1.0, "c": 1.0}
    assert asked == [["a", "b", "c"]]
    stemmed = subject_rescore(
        {"x": 1.0}, _texts({"x": "Deploys happen on Tuesdays"})[0], frozenset({"deploi"})
    )
    assert stemmed == {"x": 1.0 + SUBJECT_WEIGHT}  # "deploys" and "deploy" share the stem "deploi"


def test_subject_rescore_does_nothing_without_weight_words_or_match() -> None:
    scores = {"a": 1.0}
    read, asked = _texts({"a": "Melanie paints"})
    assert subject_rescore(scores, read, frozenset({"carolin"}), 0.0) is scores
    assert subject_rescore(scores, read, frozenset(), 1.0) is scores
    assert asked == []  # nothing was read for a recall the re-score cannot change
    assert subject_rescore(scores, read, frozenset({"carolin"}), 1.0) is scores
    assert subject_rescore({}, read, frozenset({"carolin"}), 1.0) == {}


@settings(max_examples=60, deadline=None)
@given(
    scores=st.dictionaries(
        st.sampled_from("abcdef"), st.floats(min_value=0.0, max_value=100.0, allow_nan=False), max_size=6
    ),
    leads=st.lists(st.sampled_from(["Caroline", "Melanie", "The", "7", ""]), min_size=6, max_size=6),
    weight=st.floats(min_value=0.0, max_value=4.0, allow_nan=False),
)
def test_subject_rescore_never_lowers_a_score_nor_adds_a_fact(
    scores: dict[str, float], leads: list[str], weight: float
) -> None:
    table = {fid: f"{lead} talked about the weather" for fid, lead in zip("abcdef", leads, strict=True)}
    out = subject_rescore(scores, _texts(table)[0], frozenset({"carolin", "7"}), weight)
    assert set(out) == set(scores)
    for fid, score in scores.items():
        assert out[fid] in (score, score * (1.0 + weight))
        assert out[fid] >= score


def test_a_question_about_someone_ranks_the_facts_about_them_first(memory: Memory) -> None:
    about_caroline = memory.remember("a", "Caroline went hiking in the mountains with Melanie").id
    about_melanie = memory.remember("a", "Melanie went hiking in the mountains with Caroline").id
    request = RecallRequest(agent_ids=("a",), query="Where did Caroline go hiking?", top_k=5)

    def ranked(req: RecallRequest) -> list[str]:
        return [r.candidate.fact.id for r in run_recall(memory.store, req).results]

    assert ranked(request) == [about_caroline, about_melanie]
    assert ranked(replace(request, query="Where did Melanie go hiking?")) == [about_melanie, about_caroline]
    # Without it the two are equally strong matches, and the older one stays first whoever is asked about.
    melanie = replace(request, query="Where did Melanie go hiking?", subject_weight=0.0)
    assert ranked(melanie) == [about_caroline, about_melanie]
    assert [h.id for h in memory.recall("a", "Where did Caroline go hiking?")] == [
        about_caroline,
        about_melanie,
    ]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_the_leading_word_is_the_first_informative_word_as_the_query_tokeniser_reads_it(text: str) -> None:
    words = [w for w in tokenize_prefix(text) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]
    assert leading_word(text) == (words[0] if words else None)


def tokenize_prefix(text: str) -> list[str]:
    """The query tokeniser's words of the text's first LEAD_CHARS characters (normalised, not stemmed)."""
    return [w for w in (normalise(m.group()) for m in _TOKEN.finditer(text, 0, LEAD_CHARS)) if w]


def test_new_texts_leading_words_are_analysed_in_one_tokenizer_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from graymatter.retrieval import subject

    calls: list[list[str]] = []
    real = subject._TOKENIZER.stems

    def counted(terms: Sequence[str]) -> list[list[str]]:
        calls.append(list(terms))
        return real(terms)

    monkeypatch.setattr(subject, "_KNOWN", {})
    monkeypatch.setattr(subject._TOKENIZER, "stems", counted)
    table = {f"f{i}": f"{name} wrote note {i}" for i, name in enumerate(["Caroline", "Melanie"] * 20)}
    table["none"] = "it is what it is"
    query = frozenset().union(*stems(["caroline"]))
    scores = dict.fromkeys(table, 1.0)
    first = subject_rescore(scores, _texts(table)[0], query, 1.0)
    assert calls == [["caroline", "melanie"]]  # one call, each distinct leading word once
    assert first == {fid: 2.0 if text.startswith("Caroline") else 1.0 for fid, text in table.items()}
    assert subject_rescore(scores, _texts(table)[0], query, 1.0) == first
    assert len(calls) == 1  # remembered: the second recall analyses nothing
