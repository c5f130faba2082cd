"""CI floors on the seeded synthetic quality suite (benchmarks/synthetic_quality.py).

The corpus is generated in the repo, the store is built through the public API (``revise`` makes the
tombstones) and recall runs with the default offline configuration. Floors sit a little under the
measured values recorded in benchmarks/README.md so a retrieval regression fails CI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.planted import generate
from benchmarks.synthetic_quality import FULL, QualityReport, build_and_evaluate


@pytest.fixture(scope="module")
def corpus():
    return generate(**FULL)


@pytest.fixture(scope="module")
def revised(corpus, tmp_path_factory: pytest.TempPathFactory) -> QualityReport:
    return build_and_evaluate(tmp_path_factory.mktemp("revised") / "store", corpus, revised=True)


@pytest.fixture(scope="module")
def flat(corpus, tmp_path_factory: pytest.TempPathFactory) -> QualityReport:
    return build_and_evaluate(tmp_path_factory.mktemp("flat") / "store", corpus, revised=False)


def test_superseded_facts_are_never_returned(revised: QualityReport) -> None:
    assert revised.retired_returned == 0


def test_every_revised_value_is_current(revised: QualityReport) -> None:
    assert revised.families_total == len(generate(**FULL).families)
    assert revised.families_current == revised.families_total


def test_flat_control_still_reproduces_the_stale_value_problem(flat: QualityReport) -> None:
    # If the control stopped showing retired values, the two checks above would prove nothing.
    assert flat.retired_returned > 0


def test_recency_orders_equally_strong_matches_even_without_revise(flat: QualityReport) -> None:
    # Versions of one value match the question equally well; recency puts the newest first
    # (fusion.evidence_order), so even a store that never revises shows the current value on top.
    assert flat.families_current == flat.families_total


def test_planted_facts_hit_rate_floors(revised: QualityReport) -> None:
    assert revised.hit_at(8, "lexical") >= 0.95
    assert revised.hit_at(8) >= 0.90
    assert revised.hit_at(1) >= 0.75
    assert revised.hit_at(3) >= 0.90
    assert revised.mrr() >= 0.85


def test_recall_is_deterministic(revised: QualityReport) -> None:
    assert revised.deterministic


def test_store_build_is_reproducible(corpus, tmp_path: Path, revised: QualityReport) -> None:
    again = build_and_evaluate(tmp_path / "store", corpus, revised=True)
    assert again.ranks == revised.ranks
    assert again.families_current == revised.families_current
