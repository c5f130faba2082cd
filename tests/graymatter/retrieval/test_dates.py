"""Dates a query names and the keyword matches written in them (retrieval/dates.py), and the near-tie
width of recency ordering (fusion.NEAR_TIE)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graymatter import Memory
from graymatter.config import MemoryConfig
from graymatter.ids import new_ulid
from graymatter.models import ExportBundle, Fact, Provenance, utcnow
from graymatter.retrieval.dates import (
    DATE_SLACK_DAYS,
    DATE_WEIGHT,
    date_windows,
    dated_rescore,
    without_dates,
)
from graymatter.retrieval.fusion import NEAR_TIE, evidence_order
from graymatter.retrieval.relevance import word_groups


def _d(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What movie did Joanna watch on 1 May, 2022?", [(_d(2022, 5, 1), _d(2022, 5, 2))]),
        ("what happened on May 1st, 2022", [(_d(2022, 5, 1), _d(2022, 5, 2))]),
        ("the 3rd of March 2021 deploy", [(_d(2021, 3, 3), _d(2021, 3, 4))]),
        ("logs from 2023-07-31", [(_d(2023, 7, 31), _d(2023, 8, 1))]),
        ("Who joined in May 2022?", [(_d(2022, 5, 1), _d(2022, 6, 1))]),
        ("plans for December 2022", [(_d(2022, 12, 1), _d(2023, 1, 1))]),
        ("the first half of Sept. 2022", [(_d(2022, 9, 1), _d(2022, 10, 1))]),
        ("the summer of 2021", [(_d(2021, 1, 1), _d(2022, 1, 1))]),  # a season is read as its year
        ("What did Nate win in 2021?", [(_d(2021, 1, 1), _d(2022, 1, 1))]),
        (
            "between 2 June 2022 and July 2022",
            [(_d(2022, 6, 2), _d(2022, 6, 3)), (_d(2022, 7, 1), _d(2022, 8, 1))],
        ),
        ("When did Caroline go to the support group?", []),  # no calendar date: nothing to match
        ("what happened last week", []),  # relative: needs a reference the query does not give
        ("on 31 February 2022", []),  # not a date (and not also read as a month)
        ("room 7 on floor 12", []),
    ],
)
def test_date_windows_reads_explicit_dates_once_each(query: str, expected: list) -> None:
    assert date_windows(query) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_date_windows_never_fails_and_returns_bounded_periods(text: str) -> None:
    windows = date_windows(text)
    assert len(windows) <= 8
    for start, end in windows:
        assert start < end <= start + timedelta(days=366)


def test_the_words_of_a_date_are_not_words_a_fact_must_contain() -> None:
    assert without_dates("What movie did Joanna watch on 1 May, 2022?").split() == [
        "What", "movie", "did", "Joanna", "watch", "on", "?"
    ]  # fmt: skip
    assert without_dates("no date here, room 7") == "no date here, room 7"
    assert without_dates("2022") == "2022"  # nothing else to ask about: the query stays as it is
    assert len(word_groups("What movie did Joanna watch on 1 May, 2022?")) == 3  # movie, joanna, watch
    assert len(word_groups("What movie did Joanna watch?")) == 3


def test_dated_rescore_favours_matches_written_in_the_period_or_the_week_after() -> None:
    scores = {"inside": 1.0, "week_after": 1.0, "month_after": 1.0, "before": 1.0, "unknown": 1.0}
    info = {
        "inside": (_d(2022, 5, 20), "inferred"),
        "week_after": (_d(2022, 6, 1) + timedelta(days=DATE_SLACK_DAYS) - timedelta(seconds=1), "inferred"),
        "month_after": (_d(2022, 7, 1), "inferred"),
        "before": (_d(2022, 4, 30), "inferred"),
    }
    out = dated_rescore(scores, info, date_windows("in May 2022"))
    boosted = 1.0 + DATE_WEIGHT
    assert out == {
        "inside": boosted,
        "week_after": boosted,
        "month_after": 1.0,
        "before": 1.0,
        "unknown": 1.0,
    }
    assert dated_rescore(scores, info, []) is scores
    assert dated_rescore(scores, info, date_windows("in May 2022"), weight=0.0) is scores


def test_near_ties_are_within_two_percent() -> None:
    created = {"old": _d(2022, 1, 1), "new": _d(2022, 6, 1)}
    assert evidence_order({"old": 1.0, "new": 0.99}, created, newest_first=True) == ["new", "old"]
    assert evidence_order({"old": 1.0, "new": 0.95}, created, newest_first=True) == ["old", "new"]
    assert NEAR_TIE == 0.02


def _import(memory: Memory, agent: str, facts: list[tuple[datetime, str]]) -> None:
    rows = [
        Fact(
            id=new_ulid(int(at.timestamp() * 1000)),
            agent_id=agent,
            text=text,
            created_at=at,
            accessed_at=at,
            provenance=Provenance(interface="import"),
        )
        for at, text in facts
    ]
    memory.import_bundle(ExportBundle(exported_at=utcnow(), facts=rows, checkpoints=[], links=[]))


def test_a_question_naming_a_month_ranks_what_was_written_then_first(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "gm", config=MemoryConfig(async_consolidate=False), embedder=None)
    try:
        _import(
            mem,
            "j",
            [
                (_d(2022, 5, 3, 18), "Joanna watched a movie with her friends"),
                (_d(2022, 5, 4, 18), "Bought new running shoes downtown"),
                (_d(2022, 8, 10, 18), "Joanna watched a movie at home"),
            ],
        )
        texts = [h.text for h in mem.recall("j", "What movie did Joanna watch in May 2022?")]
        assert texts[0] == "Joanna watched a movie with her friends"
        assert "Bought new running shoes downtown" not in texts  # its date alone is no evidence
        undated = [h.text for h in mem.recall("j", "What movie did Joanna watch?")]
        assert undated[0] == "Joanna watched a movie at home"  # equally strong: the newest first
        explained = mem.recall_explain("j", "What movie did Joanna watch in May 2022?")
        assert explained[0].ranks.keyword_rank == 1
        hits = mem.recall("j", "What movie did Joanna watch in May 2022?")
        assert hits[0].relevance == 1.0  # every word but the date's, which created_at answers
    finally:
        mem.close()
