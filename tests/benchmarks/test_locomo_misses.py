"""benchmarks/locomo_misses.py: every question gets one outcome, and the lexical ceiling follows from them."""

from __future__ import annotations

from benchmarks.locomo_data import Conversation, Observation, Question, Turn
from benchmarks.locomo_misses import OUTCOMES, measure, outcomes, profile


def _conversation() -> Conversation:
    conv = Conversation("conv-x", ("Caroline", "Melanie"))
    conv.turns = [Turn(f"D1:{i}", 1, "1:00 pm on 1 May, 2023", "Caroline", "hello") for i in range(1, 5)]
    conv.observations = [
        Observation("Caroline adopted a puppy named Shadow.", frozenset({"D1:1"}), 1),
        Observation("Melanie's grandmother lives in Sweden.", frozenset({"D1:2"}), 1),
        Observation("Caroline paints sunsets.", frozenset({"D1:3"}), 1),
    ]
    conv.questions = [
        Question("What is the name of Caroline's puppy?", 4, frozenset({"D1:1"})),  # ranked first: hit
        Question("Where is Melanie's grandma from?", 4, frozenset({"D1:2"})),  # no shared word but the name
        Question("What does Caroline paint?", 4, frozenset({"D1:3"})),  # shares "paint", ranked out of reach
        Question("What did Caroline say?", 1, frozenset({"D1:4"})),  # no observation holds D1:4
    ]
    return conv


def _rank(query: str) -> list[str]:
    return ["D1:1"] if "puppy" in query else ["D1:9"] * 12


def test_each_question_gets_exactly_one_outcome() -> None:
    counts = outcomes(_conversation(), _rank)
    assert counts == {
        "hit": 1,
        "no observation in evidence": 1,
        "missed, shares a word": 1,
        "missed, shares no word": 1,
    }
    assert tuple(counts) == OUTCOMES


def test_the_lexical_ceiling_counts_hits_and_misses_that_share_a_word() -> None:
    summary = profile([outcomes(_conversation(), _rank), outcomes(_conversation(), _rank)])
    assert summary["questions"] == 8
    assert summary["lexical_ceiling_hit_at_10"] == 0.5
    results, rows = measure(
        [("sys", lambda conv: _rank)], [_conversation()], {"dev": ("conv-x",), "none": ()}
    )
    assert results["sys"]["dev"]["hit"] == 1
    assert results["sys"]["none"] == {
        "questions": 0,
        **dict.fromkeys(OUTCOMES, 0),
        "lexical_ceiling_hit_at_10": 0.0,
    }
    assert rows[0] == ["sys", "dev", 4, 1, 1, 1, 1, 0.5]
